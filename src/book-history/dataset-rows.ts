import type { BookState } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import { bookInstants } from '../queries/orderbook.js';
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

/**
 * A row's consumer: `time` is the row's timestamp (the event time, or the grid point). It returns
 * true when it holds all it should before handing something on (a full chunk, a full row group): the
 * read then yields before the next row.
 */
export type BookRowVisitor = (time: number, state: BookState) => boolean | void;

/** Visits every row of the dataset, synchronously; yields once per turn (bookStates) and after each row its visitor returned true for. */
export function bookRows(engine: Engine, q: BookExportQuery, visit: BookRowVisitor, signal?: AbortSignal): AsyncGenerator<void> {
  if (q.interval !== undefined) {
    // The first multiple of interval at or after start (the grid of docs/TIME-MACHINE.md §3).
    const first = Math.ceil(q.start / q.interval) * q.interval;
    // Only a turn is asked for here: a dataset row never stops the read (false would, to gridStates).
    const grid = { assetId: q.assetId, since: first, until: q.end, interval: q.interval };
    return gridStates(engine, grid, (time, state) => visit(time, state) === true || undefined, signal);
  }
  // The millisecond whose row was made: bookStates calls again with the same state after the turn
  // a visitor asked for, and that row must not be made twice.
  let made = Number.NaN;
  return bookStates(
    engine,
    { assetId: q.assetId, from: q.start, to: q.end },
    (state) => {
      // bookStates starts at the snapshot before `start`: those states only build the book.
      if (state.timestamp < q.start || state.timestamp === made) return;
      made = state.timestamp;
      if (visit(state.timestamp, state) === true) return true;
    },
    signal,
  );
}

/**
 * Whether the dataset has more than `limit` rows: counted for a grid (its points from the first
 * multiple of `interval` on, an upper bound: points before the first book are skipped), and for a
 * dataset of book changes bounded by the milliseconds of the range, else counted by the engine up to
 * `limit` + 1.
 */
export async function moreRowsThan(engine: Engine, q: BookExportQuery, limit: number, signal?: AbortSignal): Promise<boolean> {
  if (q.interval !== undefined) {
    const first = Math.ceil(q.start / q.interval) * q.interval;
    return first <= q.end && Math.floor((q.end - first) / q.interval) + 1 > limit;
  }
  if (q.end - q.start + 1 <= limit) return false;
  return (await bookInstants(engine, { assetId: q.assetId, start: q.start, end: q.end, limit: limit + 1 }, signal)) > limit;
}
