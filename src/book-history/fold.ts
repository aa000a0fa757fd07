import { type BookState, OrderBook, sideOfOrder } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import { LoopBreaks } from '../event-loop.js';
import { clampTime, forwardQuery, latestSnapshotKey, snapshotAndChanges } from '../queries/orderbook.js';
import { BookEventDecoder, KIND_CHANGE, SIDE_BUY } from './event-decoder.js';

/**
 * Order book reconstruction (docs/INGEST.md §2), folded with src/book from what src/queries/orderbook.ts
 * reads. The book at T = the latest snapshot (exchange `book` or checkpoint) with t ≤ T, then every
 * `price_change` after it in (t, seq) order with t ≤ T; a price_change records the book side it set in
 * `book_side` (BUY = bids, SELL = asks).
 *
 * Lookups at an instant read book_events through the segment cache (cache.ts). bookStateAt reads the
 * tables the events come from instead (book_snapshots, ticks) in one query, whatever lies between the
 * snapshot and T: the answer for an instant no bounded read of book_events reaches.
 */

/** The book at `at` (ms; null = latest), or null when the asset has no book then: one query of book_snapshots and ticks. */
export async function bookStateAt(engine: Engine, assetId: string, at: number | null, signal?: AbortSignal): Promise<BookState | null> {
  const { snap, deltas } = await snapshotAndChanges(engine, assetId, at, signal);
  if (snap === null && deltas.length === 0) return null;
  const state: BookState = { market: '', timestamp: 0, book: new OrderBook() };
  if (snap !== null) {
    [state.timestamp, , state.market] = snap;
    state.book.replace(snap[3], snap[4]);
  }
  // In (t, seq) order: arrival order within a millisecond decides which size a level ends with.
  deltas.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  for (const [t, , price, size, bookSide, market] of deltas) {
    state.book.apply(sideOfOrder(bookSide), price, size);
    state.timestamp = t;
    state.market = market;
  }
  return state;
}

/**
 * A consumer of a fold, called synchronously with each state (the book as of every instant in
 * [state.timestamp, until)) before the next event changes it: copy what you keep. It returns
 * `false` to stop the read, `true` to be called again with the same state after the fold's next
 * turn (it has more to give than one turn should hold), nothing to go on.
 */
export type StateVisitor = (state: BookState, until: number) => boolean | void;

/** States visited per turn at most: what a consumer accumulates between two turns stays bounded. */
const STATES_PER_TURN = 4096;

/**
 * The book of an asset through [from, to], one state per millisecond that has events: each state is
 * visited after every event of its millisecond was applied, with `until`, the next event's time
 * (Infinity after the last). The first state is the book as of the latest snapshot at or before
 * `from` and what follows it, so states before `from` come first (consumers skip them). One
 * streaming read of book_events in (t, seq) order, folded with src/book; stopping, or leaving the
 * loop, cancels the read.
 *
 * The generator yields (nothing) once per turn: after each chunk of the read, every STATES_PER_TURN
 * states, and when the visitor asks for it. A consumer formatting rows pays one await per turn, not
 * one per row (three async generator hops per row were a fifth of a book export's CPU).
 */
export async function* bookStates(
  engine: Engine,
  q: { assetId: string; from: number; to: number },
  visit: StateVisitor,
  signal?: AbortSignal,
): AsyncGenerator<void> {
  const start = await latestSnapshotKey(engine, q.assetId, q.from, signal);
  // The snapshot's market is the one the asset's events carry (BookEventDecoder).
  const usualMarket = start?.[2] ?? '';
  const read = forwardQuery(q.assetId, { ms: start?.[0] ?? 0, seq: start?.[1] ?? 0 }, q.to, usualMarket);
  const bytes = engine.stream(read.sql, 'RowBinary', { params: read.params, signal });
  const decoder = new BookEventDecoder(usualMarket);
  const state: BookState = { market: '', timestamp: 0, book: new OrderBook() };
  const { book } = state;
  let applied = false;
  let visited = 0;
  // Turns are microtasks: every few ms one waits for the event loop (src/event-loop.ts).
  const breaks = new LoopBreaks();
  try {
    for await (const chunk of bytes) {
      decoder.feed(chunk);
      for (let e = decoder.read(); e !== undefined; e = decoder.read()) {
        if (applied && e.ms !== state.timestamp) {
          let more: boolean | void;
          while ((more = visit(state, e.ms)) === true) {
            yield;
            if (breaks.due()) await breaks.turn();
          }
          if (more === false) return;
          if (++visited % STATES_PER_TURN === 0) {
            yield;
            if (breaks.due()) await breaks.turn();
          }
        }
        if (e.kind === KIND_CHANGE) book.apply(e.bookSide === SIDE_BUY ? 'bid' : 'ask', e.price, e.size);
        else book.replace(e.bids, e.asks);
        state.timestamp = e.ms;
        state.market = e.market;
        applied = true;
      }
      yield;
      if (breaks.due()) await breaks.turn();
    }
  } finally {
    // Stopping or leaving the loop early cancels the engine query.
    bytes.destroy();
  }
  if (decoder.unfinished) throw new Error('book_events read ended inside a row');
  if (!applied) return;
  while (visit(state, Infinity) === true) {
    yield;
    if (breaks.due()) await breaks.turn();
  }
}

/** Grid points visited per turn at most (a long quiet stretch holds many under one state). */
const POINTS_PER_TURN = 4096;

/**
 * The book at since, since + interval, … ≤ until, skipping points before the asset's first book:
 * the fold of one bookStates read, `visit(time, state)` per grid point, turns as in bookStates. The
 * visitor returns false to stop, true to have a turn before the next point.
 */
export function gridStates(
  engine: Engine,
  q: { assetId: string; since: number; until: number; interval: number },
  visit: (time: number, state: BookState) => boolean | void,
  signal?: AbortSignal,
): AsyncGenerator<void> {
  const last = clampTime(q.until);
  let point = q.since;
  return bookStates(
    engine,
    { assetId: q.assetId, from: q.since, to: last },
    (state, until) => {
      // Points before the first book are skipped: start at the first point on or after it.
      if (point < state.timestamp) point = q.since + Math.ceil((state.timestamp - q.since) / q.interval) * q.interval;
      for (let n = 0; point < until && point <= last; n++) {
        if (n === POINTS_PER_TURN) return true;
        const more = visit(point, state);
        if (more === false) return false;
        point += q.interval;
        if (more === true) return point <= last;
      }
      if (point > last) return false;
    },
    signal,
  );
}

/** Books sampled every `interval` ms (gridStates), at most `limit` of them. */
export async function sampledBooks(
  engine: Engine,
  q: { assetId: string; since: number; until: number; interval: number; limit: number },
  signal?: AbortSignal,
): Promise<BookState[]> {
  const out: BookState[] = [];
  const keep = (_time: number, state: BookState) => {
    out.push({ market: state.market, timestamp: state.timestamp, book: state.book.clone() });
    if (out.length === q.limit) return false;
  };
  for await (const _turn of gridStates(engine, q, keep, signal));
  return out;
}
