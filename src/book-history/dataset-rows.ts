import type { BookState } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import { bookStates, gridStates } from './fold.js';

/**
 * Rows of a book dataset (docs/TIME-MACHINE.md §3): the book after every book-changing millisecond in
 * [start, end], or at every multiple of `interval` in [start, end] (multiples since the Unix epoch, so
 * the grids of two requests line up). One streaming read of book_events
 * from the latest snapshot at or before `start`, folded with src/book (bookStates); no engine round
 * trip per row. `time` is the row's timestamp (the event time, or the grid point); the state object
 * is reused from row to row, as bookStates says.
 */
export interface BookExportQuery {
  assetId: string;
  start: number;
  end: number;
  /** Grid step in ms; without it one row per book-changing millisecond. */
  interval?: number;
}

/** A row's consumer: `time` is the row's timestamp (the event time, or the grid point). */
export type BookRowVisitor = (time: number, state: BookState) => void;

/** Visits every row of the dataset, synchronously; yields once per turn (bookStates). */
export function bookRows(engine: Engine, q: BookExportQuery, visit: BookRowVisitor, signal?: AbortSignal): AsyncGenerator<void> {
  if (q.interval !== undefined) {
    // The first multiple of interval at or after start (the grid of docs/TIME-MACHINE.md §3).
    const first = Math.ceil(q.start / q.interval) * q.interval;
    return gridStates(engine, { assetId: q.assetId, since: first, until: q.end, interval: q.interval }, visit, signal);
  }
  return bookStates(
    engine,
    { assetId: q.assetId, from: q.start, to: q.end },
    (state) => {
      // bookStates starts at the snapshot before `start`: those states only build the book.
      if (state.timestamp >= q.start) visit(state.timestamp, state);
    },
    signal,
  );
}
