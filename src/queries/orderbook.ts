import { type BookState, type Level, midpoint, OrderBook } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import { BINARY_EVENT_COLUMNS } from './book-event-columns.js';

/**
 * The reads of order book history (docs/INGEST.md §2): the latest snapshot (exchange `book` or
 * checkpoint) at or before an instant, the changes after it, the exchange's snapshots of a range, and
 * the midpoint history. Only SQL and its runners: src/book-history folds what they return into books.
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

export type SnapshotTuple = [t: number, seq: number, market: string, bids: Level[], asks: Level[]];
export type DeltaTuple = [t: number, seq: number, price: number, size: number, bookSide: 'BUY' | 'SELL', market: string];

export function clampTime(at: number): number {
  return Math.min(at, MAX_TIME_MS);
}

/** The latest snapshot at or before `at` (ms; null = latest) and the changes after it up to `at`, unordered: one query. */
export async function snapshotAndChanges(engine: Engine, assetId: string, at: number | null, signal?: AbortSignal) {
  const params = { asset_id: assetId, at: clampTime(at ?? MAX_TIME_MS) };
  const [row] = await engine.rows<{ snap: SnapshotTuple | null; deltas: DeltaTuple[] }>(STATE_SQL, { params, signal });
  return row;
}

/** Key (t ms, seq) and market of the latest snapshot at or before {at}, or nothing. */
const START_SQL = `
SELECT toUnixTimestamp64Milli(t) AS ms, seq, market
FROM book_events
WHERE asset_id = {asset_id:String} AND kind != 'price_change' AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
ORDER BY t DESC, seq DESC
LIMIT 1
SETTINGS ${POINT_READ}`;

/** Key (t ms, seq) and market of the latest snapshot at or before `at`, if any. */
export async function latestSnapshotKey(
  engine: Engine,
  assetId: string,
  at: number,
  signal?: AbortSignal,
): Promise<[ms: number, seq: number, market: string] | undefined> {
  const [start] = await engine.compactRows<[number, number, string]>(START_SQL, { params: { asset_id: assetId, at: clampTime(at) }, signal });
  return start;
}

/**
 * Every book event from the key {from_ms, from_seq} up to {to}, in (t, seq) order: one primary-key
 * range read in order, as RowBinary (BookEventDecoder). `orderTail` breaks ties after (t, seq) for a
 * reader that looks at each event with the book before it (timed-book-events.ts).
 */
export const forwardSql = (extraColumns = '', orderTail = '') => `
SELECT ${BINARY_EVENT_COLUMNS}${extraColumns}
FROM book_events
WHERE asset_id = {asset_id:String}
  AND t >= fromUnixTimestamp64Milli({from_ms:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({to:Int64}, 'UTC')
  AND (t > fromUnixTimestamp64Milli({from_ms:Int64}, 'UTC') OR seq >= {from_seq:UInt64})
ORDER BY t, seq${orderTail}
SETTINGS use_query_condition_cache = 0`;
const FORWARD_SQL = forwardSql();

/**
 * The read of bookStates (book-history/fold.ts): every book event of `assetId` from the key `from` (a
 * snapshot's, or {0, 0}: the asset's first event) up to `to`, with {usual_market} bound
 * (BookEventDecoder). Also what the bench times alone, with nothing done with its rows.
 */
export function forwardQuery(assetId: string, from: { ms: number; seq: number }, to: number, usualMarket: string) {
  return { sql: FORWARD_SQL, params: { asset_id: assetId, from_ms: from.ms, from_seq: from.seq, to: clampTime(to), usual_market: usualMarket } };
}

/**
 * How many milliseconds of [start, end] have book events (the rows of a book dataset without a grid),
 * counting no further than {limit}: the DISTINCT stops reading once it has that many, so a bound is
 * checked at the cost of the rows under it.
 */
const BOOK_INSTANTS_SQL = `
SELECT count() AS n FROM (
  SELECT DISTINCT t FROM book_events
  WHERE asset_id = {asset_id:String} AND t >= fromUnixTimestamp64Milli({start:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({end:Int64}, 'UTC')
  LIMIT {limit:UInt64})`;

export async function bookInstants(engine: Engine, q: { assetId: string; start: number; end: number; limit: number }, signal?: AbortSignal): Promise<number> {
  const params = { asset_id: q.assetId, start: clampTime(q.start), end: clampTime(q.end), limit: q.limit };
  const [[n]] = await engine.compactRows<[number]>(BOOK_INSTANTS_SQL, { params, signal });
  return n;
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
    params: { asset_id: q.assetId, since: clampTime(q.since), until: clampTime(q.until), limit: q.limit, depth: q.depth },
    signal,
  });
  return rows.map((r) => ({ market: r.market, timestamp: r.timestamp, book: OrderBook.of(r.bids, r.asks) }));
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
    params: { asset_id: q.assetId, start: clampTime(q.start), end: clampTime(q.end), fidelity: q.fidelity, limit: q.limit },
    signal,
  });
  return rows.map((r) => ({ t: r.bucket, p: midpoint(r.top[0], r.top[1]) }));
}
