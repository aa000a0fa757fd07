import { midpoint, OrderBook, sideOfOrder, type BookState, type Level } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import { LoopBreaks, nextTurn } from '../event-loop.js';
import { BINARY_EVENT_COLUMNS, BookEventDecoder, KIND_CHANGE, SIDE_BUY } from './book-event-decoder.js';

/**
 * Order book reconstruction (INGEST.md §2). The book at T = the latest snapshot (exchange `book` or
 * checkpoint) with t ≤ T, then every `price_change` after it in (t, seq) order with t ≤ T; a
 * price_change records the book side it set in `book_side` (BUY = bids, SELL = asks). The levels are
 * applied by src/book (OrderBook); this file only reads the events.
 *
 * Lookups at an instant read book_events through the segment cache (book-cache.ts). bookStateAt
 * reads the tables the events come from instead (book_snapshots, ticks) in one query, whatever
 * lies between the snapshot and T: the answer for an instant no bounded read of book_events reaches.
 */

/** Largest instant DateTime64(3) holds (2299-12-31 23:59:59.999 UTC): "latest" and the clamp for later times. */
export const MAX_TIME_MS = 10_413_791_999_999;

/**
 * For reads of a few granules, where fixed costs dominate (measured per query at random T on the
 * 6M-tick bench asset): one thread (a second one only adds hand-offs, and the pool already runs one
 * query per core); no skip indexes (ticks' t_minmax cannot narrow a primary-key range and costs a read
 * of its own); no query condition cache (every lookup has a new T, so it only pays for inserts).
 */
export const POINT_READ = 'max_threads = 1, use_skip_indexes = 0, use_query_condition_cache = 0';

/**
 * The latest snapshot (t ms, seq, market, bids, asks) or null, and every `price_change` after it up
 * to {at} as (t ms, seq, price, size, book_side, market). One row always. The snapshot key is a
 * scalar subquery, so the ticks read is a primary-key range from it to {at}.
 */
const STATE_SQL = `
WITH fromUnixTimestamp64Milli({at:Int64}, 'UTC') AS at,
  (SELECT (toUnixTimestamp64Milli(t), seq, market, bids, asks) FROM book_snapshots
   WHERE asset_id = {asset_id:String} AND t <= at
   ORDER BY t DESC, seq DESC LIMIT 1) AS snap,
  fromUnixTimestamp64Milli(assumeNotNull(snap).1, 'UTC') AS snap_t
SELECT snap, groupArray((toUnixTimestamp64Milli(t), seq, price, size, book_side, market)) AS deltas
FROM ticks
WHERE asset_id = {asset_id:String} AND event = 'price_change' AND t >= snap_t AND t <= at
  AND (snap IS NULL OR (t, seq) > (snap_t, assumeNotNull(snap).2))
SETTINGS ${POINT_READ}`;

type SnapshotTuple = [t: number, seq: number, market: string, bids: Level[], asks: Level[]];
type DeltaTuple = [t: number, seq: number, price: number, size: number, bookSide: 'BUY' | 'SELL', market: string];

function clamp(at: number): number {
  return Math.min(at, MAX_TIME_MS);
}

/** The book at `at` (ms; null = latest), or null when the asset has no book then: one query of book_snapshots and ticks. */
export async function bookStateAt(engine: Engine, assetId: string, at: number | null, signal?: AbortSignal): Promise<BookState | null> {
  const params = { asset_id: assetId, at: clamp(at ?? MAX_TIME_MS) };
  const [{ snap, deltas }] = await engine.rows<{ snap: SnapshotTuple | null; deltas: DeltaTuple[] }>(STATE_SQL, { params, signal });
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

/** Key (t ms, seq) and market of the latest snapshot at or before {at}, or nothing. */
const START_SQL = `
SELECT toUnixTimestamp64Milli(t) AS ms, seq, market
FROM book_events
WHERE asset_id = {asset_id:String} AND kind != 'price_change' AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
ORDER BY t DESC, seq DESC
LIMIT 1
SETTINGS ${POINT_READ}`;

/**
 * Every book event from the key {from_ms, from_seq} up to {to}, in (t, seq) order: one primary-key
 * range read in order, as RowBinary (BookEventDecoder).
 */
const FORWARD_SQL = `
SELECT ${BINARY_EVENT_COLUMNS}
FROM book_events
WHERE asset_id = {asset_id:String}
  AND t >= fromUnixTimestamp64Milli({from_ms:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({to:Int64}, 'UTC')
  AND (t > fromUnixTimestamp64Milli({from_ms:Int64}, 'UTC') OR seq >= {from_seq:UInt64})
ORDER BY t, seq
SETTINGS use_query_condition_cache = 0`;

/**
 * The read of bookStates: every book event of `assetId` from the key `from` (a snapshot's, or
 * {0, 0}: the asset's first event) up to `to`, with {usual_market} bound (BookEventDecoder).
 * Exported so the bench can time this read alone, with nothing done with its rows.
 */
export function forwardQuery(assetId: string, from: { ms: number; seq: number }, to: number, usualMarket: string) {
  return { sql: FORWARD_SQL, params: { asset_id: assetId, from_ms: from.ms, from_seq: from.seq, to: clamp(to), usual_market: usualMarket } };
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
  const [start] = await engine.compactRows<[number, number, string]>(START_SQL, { params: { asset_id: q.assetId, at: clamp(q.from) }, signal });
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
            if (breaks.due()) await nextTurn();
          }
          if (more === false) return;
          if (++visited % STATES_PER_TURN === 0) {
            yield;
            if (breaks.due()) await nextTurn();
          }
        }
        if (e.kind === KIND_CHANGE) book.apply(e.bookSide === SIDE_BUY ? 'bid' : 'ask', e.price, e.size);
        else book.replace(e.bids, e.asks);
        state.timestamp = e.ms;
        state.market = e.market;
        applied = true;
      }
      yield;
      if (breaks.due()) await nextTurn();
    }
  } finally {
    // Stopping or leaving the loop early cancels the engine query.
    bytes.destroy();
  }
  if (decoder.unfinished) throw new Error('book_events read ended inside a row');
  if (!applied) return;
  while (visit(state, Infinity) === true) {
    yield;
    if (breaks.due()) await nextTurn();
  }
}

/** The exchange's own snapshots (`book` events, not checkpoints) in [since, until], ascending, at most `depth` levels per side. */
const SNAPSHOTS_SQL = `
SELECT market, toUnixTimestamp64Milli(t) AS timestamp, arraySlice(bids, 1, {depth:UInt32}) AS bids, arraySlice(asks, 1, {depth:UInt32}) AS asks
FROM book_snapshots
WHERE asset_id = {asset_id:String} AND is_checkpoint = 0
  AND t >= fromUnixTimestamp64Milli({since:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({until:Int64}, 'UTC')
ORDER BY t, seq
LIMIT {limit:UInt32}`;

export async function exchangeSnapshots(
  engine: Engine,
  q: { assetId: string; since: number; until: number; limit: number; depth: number },
  signal?: AbortSignal,
): Promise<BookState[]> {
  const rows = await engine.rows<{ market: string; timestamp: number; bids: Level[]; asks: Level[] }>(SNAPSHOTS_SQL, {
    params: { asset_id: q.assetId, since: clamp(q.since), until: clamp(q.until), limit: q.limit, depth: q.depth },
    signal,
  });
  return rows.map((r) => ({ market: r.market, timestamp: r.timestamp, book: OrderBook.of(r.bids, r.asks) }));
}

/** Grid points visited per turn at most (a long quiet stretch holds many under one state). */
const POINTS_PER_TURN = 4096;

/**
 * The book at since, since + interval, … ≤ until, skipping points before the asset's first book:
 * the fold of one bookStates read, `visit(time, state)` per grid point (false stops), turns as in
 * bookStates.
 */
export function gridStates(
  engine: Engine,
  q: { assetId: string; since: number; until: number; interval: number },
  visit: (time: number, state: BookState) => boolean | void,
  signal?: AbortSignal,
): AsyncGenerator<void> {
  const last = clamp(q.until);
  let point = q.since;
  return bookStates(
    engine,
    { assetId: q.assetId, from: q.since, to: last },
    (state, until) => {
      // Points before the first book are skipped: start at the first point on or after it.
      if (point < state.timestamp) point = q.since + Math.ceil((state.timestamp - q.since) / q.interval) * q.interval;
      for (let n = 0; point < until && point <= last; n++) {
        if (n === POINTS_PER_TURN) return true;
        if (visit(point, state) === false) return false;
        point += q.interval;
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
    return out.length < q.limit;
  };
  for await (const _turn of gridStates(engine, q, keep, signal));
  return out;
}

/**
 * One point per `fidelity`-second bucket with ticks: the midpoint of the best prices the bucket's
 * last tick (by t, then arrival) carries, which describe the book after it. The engine picks the
 * tick; src/book computes the midpoint.
 */
const PRICES_HISTORY_SQL = `
SELECT intDiv(toUnixTimestamp64Milli(t), {fidelity:UInt32} * 1000) * {fidelity:UInt32} AS bucket,
       argMax((best_bid, best_ask), (t, seq)) AS top
FROM ticks
WHERE asset_id = {asset_id:String}
  AND t >= fromUnixTimestamp64Milli({start:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({end:Int64}, 'UTC')
GROUP BY bucket
ORDER BY bucket
LIMIT {limit:UInt32}`;

export async function pricesHistory(
  engine: Engine,
  q: { assetId: string; start: number; end: number; fidelity: number; limit: number },
  signal?: AbortSignal,
): Promise<{ t: number; p: number }[]> {
  const rows = await engine.rows<{ bucket: number; top: [number, number] }>(PRICES_HISTORY_SQL, {
    params: { asset_id: q.assetId, start: clamp(q.start), end: clamp(q.end), fidelity: q.fidelity, limit: q.limit },
    signal,
  });
  return rows.map((r) => ({ t: r.bucket, p: midpoint(r.top[0], r.top[1]) }));
}
