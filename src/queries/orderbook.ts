import type { Engine } from '../clickhouse/engine.js';
import { DEFAULT_CHECKPOINTS } from '../ingest/normalizer.js';

/**
 * Order book reconstruction (INGEST.md §2), one engine query per call.
 *
 * The book at T = the latest snapshot (exchange `book` or checkpoint) with t ≤ T, overridden by the
 * last `price_change` per (side, price) after it, by (t, seq), with t ≤ T.
 * A price_change records the book side it set in `book_side` (BUY = bids, SELL = asks).
 *
 * The read: book_events holds the changes and the snapshots of an asset in one key range, so the
 * last EVENTS_READ events up to T, newest first, contain the latest snapshot whenever fewer changes
 * than that followed it, which the ingester's checkpoints guarantee (DEFAULT_CHECKPOINTS: every
 * 200). Otherwise (checkpoints off or dropped, a book that never had one) a second query reads the
 * latest snapshot from book_snapshots and every change after it from ticks: still exact, just slower.
 */

/** Largest instant DateTime64(3) holds (2299-12-31 23:59:59.999 UTC): "latest" and the clamp for later times. */
export const MAX_TIME_MS = 10_413_791_999_999;

export interface Level {
  price: number;
  size: number;
}

/** `/v1/orderbook` `data`. */
export interface Book {
  market: string;
  asset_id: string;
  timestamp: number;
  datetime: string;
  best_bid: number;
  best_ask: number;
  bids: Level[];
  asks: Level[];
}

/**
 * For reads of a few granules, where fixed costs dominate (measured per query at random T on the
 * 6M-tick bench asset): one thread (a second one only adds hand-offs, and the pool already runs one
 * query per core); no skip indexes (ticks' t_minmax cannot narrow a primary-key range and costs a read
 * of its own); no query condition cache (every lookup has a new T, so it only pays for inserts).
 */
const POINT_READ = 'max_threads = 1, use_skip_indexes = 0, use_query_condition_cache = 0';

/**
 * Events one lookup reads back from T: the checkpoint interval plus room for the snapshot row and
 * the change that shares its (t, seq). Fewer rows than this means the asset's whole history up to
 * T was read.
 */
export const EVENTS_READ = DEFAULT_CHECKPOINTS.changes + 56;

/**
 * The last EVENTS_READ events of an asset up to {at}, newest first: a reverse read of one primary-key
 * range that stops after that many rows. (`ms`, not `t`: an alias named `t` would shadow the column
 * in WHERE.) Merging happens in JS (applyDeltas): measured here, folding levels in SQL (GROUP BY per
 * level) or even a plain groupArray over these rows costs more engine CPU than the merge of a few
 * hundred map updates costs Node.
 */
const EVENTS_SQL = `
SELECT toUnixTimestamp64Milli(t) AS ms, seq, kind, market, price, size, book_side, bids, asks
FROM book_events
WHERE asset_id = {asset_id:String} AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
ORDER BY t DESC, seq DESC
LIMIT ${EVENTS_READ}
SETTINGS output_format_json_quote_64bit_integers = 0, ${POINT_READ}`;

/**
 * The fallback read: the latest snapshot (t ms, seq, market, bids, asks) or null, and every
 * `price_change` after it up to {at} as (t ms, seq, price, size, book_side, market). One row always.
 * The snapshot key is a scalar subquery, so the ticks read is a primary-key range from it to {at}.
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
SETTINGS output_format_json_quote_64bit_integers = 0, ${POINT_READ}`;

/** One row of EVENTS_SQL (JSONCompactEachRow), in its column order. */
type EventRow = [
  ms: number,
  seq: number,
  kind: 'price_change' | 'book' | 'checkpoint',
  market: string,
  price: number,
  size: number,
  bookSide: 'BUY' | 'SELL',
  bids: Level[],
  asks: Level[],
];
type SnapshotTuple = [t: number, seq: number, market: string, bids: Level[], asks: Level[]];
type DeltaTuple = [t: number, seq: number, price: number, size: number, bookSide: 'BUY' | 'SELL', market: string];

/** The book at one instant: levels by price, the time and market of the last event applied. */
export interface BookState {
  market: string;
  timestamp: number;
  bids: Map<number, number>;
  asks: Map<number, number>;
}

function clamp(at: number): number {
  return Math.min(at, MAX_TIME_MS);
}

/** The read behind bookStateAt whenever checkpoints are in place (the benchmark runs it raw). */
export function stateQuery(assetId: string, at: number | null) {
  return { sql: EVENTS_SQL, params: { asset_id: assetId, at: clamp(at ?? MAX_TIME_MS) } };
}

/**
 * The book at `at` (ms; null = latest), or null when the asset has no book then. One engine query; a
 * second only when no snapshot is among the last EVENTS_READ events (see the top of this file).
 */
export async function bookStateAt(engine: Engine, assetId: string, at: number | null, signal?: AbortSignal): Promise<BookState | null> {
  const { sql, params } = stateQuery(assetId, at);
  const events = await engine.compactRows<EventRow>(sql, { params, signal });
  const snapAt = events.findIndex((e) => e[2] !== 'price_change');
  if (snapAt >= 0) {
    const [ms, seq, , market, , , , bids, asks] = events[snapAt];
    // Changes newer than the snapshot; the one sharing its (t, seq) is already in its levels.
    const after = events.slice(0, snapAt).filter((e) => e[0] > ms || (e[0] === ms && e[1] > seq));
    return fromSnapshot([ms, seq, market, bids, asks], after.map(deltaOf));
  }
  // No snapshot up to `at`, and every event up to it was read: the changes alone make the book.
  if (events.length < EVENTS_READ) return events.length ? fromSnapshot(null, events.map(deltaOf)) : null;
  const rows = await engine.rows<{ snap: SnapshotTuple | null; deltas: DeltaTuple[] }>(STATE_SQL, { params, signal });
  const { snap, deltas } = rows[0];
  return snap === null && deltas.length === 0 ? null : fromSnapshot(snap, deltas);
}

const deltaOf = (e: EventRow): DeltaTuple => [e[0], e[1], e[4], e[5], e[6], e[3]];

function fromSnapshot(snap: SnapshotTuple | null, deltas: DeltaTuple[]): BookState {
  const state: BookState = { market: '', timestamp: 0, bids: new Map(), asks: new Map() };
  if (snap !== null) {
    [state.timestamp, , state.market] = snap;
    for (const l of snap[3]) state.bids.set(l.price, l.size);
    for (const l of snap[4]) state.asks.set(l.price, l.size);
  }
  applyDeltas(state, deltas);
  return state;
}

/** Applies the deltas in (t, seq) order: size is the level's new total, 0 removes it. */
function applyDeltas(state: BookState, deltas: DeltaTuple[]): void {
  deltas.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  for (const [t, , price, size, bookSide, market] of deltas) {
    const levels = bookSide === 'BUY' ? state.bids : state.asks;
    if (size === 0) levels.delete(price);
    else levels.set(price, size);
    state.timestamp = t;
    state.market = market;
  }
}

/** Bids by price descending, asks ascending, every level. */
export function sortedLevels(state: BookState): { bids: Level[]; asks: Level[] } {
  const levels = (m: Map<number, number>) => Array.from(m, ([price, size]) => ({ price, size }));
  return { bids: levels(state.bids).sort((a, b) => b.price - a.price), asks: levels(state.asks).sort((a, b) => a.price - b.price) };
}

/** Highest bid (0 without bids) and lowest ask (1 without asks). */
export function topOf(state: BookState): { best_bid: number; best_ask: number } {
  let bid = -Infinity;
  let ask = Infinity;
  for (const p of state.bids.keys()) if (p > bid) bid = p;
  for (const p of state.asks.keys()) if (p < ask) ask = p;
  return { best_bid: bid === -Infinity ? 0 : bid, best_ask: ask === Infinity ? 1 : ask };
}

/**
 * Prices are decimals of a few places, and float arithmetic on them leaves noise (0.083 − 0.082 =
 * 0.0010000000000000009). Prices derived by arithmetic (midpoint, spread) are rounded to 10 decimal
 * places: far below any tick size, and they read as the decimals they are.
 */
export const PRICE_DECIMALS = 10;
export function roundPrice(x: number): number {
  return Math.round(x * 10 ** PRICE_DECIMALS) / 10 ** PRICE_DECIMALS;
}

/** `YYYY-MM-DD HH:MM:SS.mmm` UTC (API.md §1). */
export function datetimeText(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
}

/** `/v1/orderbook` `data` for a state, at most `depth` levels per side. */
export function bookData(assetId: string, state: BookState, depth: number): Book {
  const { bids, asks } = sortedLevels(state);
  return {
    market: state.market,
    asset_id: assetId,
    timestamp: state.timestamp,
    datetime: datetimeText(state.timestamp),
    ...topOf(state),
    bids: bids.slice(0, depth),
    asks: asks.slice(0, depth),
  };
}

const JSON_SETTINGS = 'SETTINGS output_format_json_quote_64bit_integers = 0';
const LEVEL = 'Tuple(price Float64, size Float64)';

/** The side a delta applies to (0 = bids, 1 = asks), in SQL: the rule of applyDeltas. */
const DELTA_SIDES = "[if(book_side = 'BUY', 0, 1)]";

/**
 * Aggregates per-level rows (side 0 = bids, 1 = asks, 2 = a marker row per snapshot so that a
 * snapshot of an empty book still counts; `last` = key of the level's last event) into the book's header and full sorted sides (`all_bids`, `all_asks`). */
const BOOK_COLUMNS = `
    argMax(market, last) AS market,
    max(last).1 AS last_t,
    toUnixTimestamp64Milli(last_t) AS timestamp,
    toString(last_t) AS datetime,
    arrayReverseSort(x -> x.price, groupArrayIf(CAST((price, size), '${LEVEL}'), side = 0 AND size > 0)) AS all_bids,
    arraySort(x -> x.price, groupArrayIf(CAST((price, size), '${LEVEL}'), side = 1 AND size > 0)) AS all_asks,
    if(empty(all_bids), 0, all_bids[1].price) AS best_bid,
    if(empty(all_asks), 1, all_asks[1].price) AS best_ask`;

const SNAPSHOTS_SQL = `
SELECT market, {asset_id:String} AS asset_id, toUnixTimestamp64Milli(t) AS timestamp, toString(t) AS datetime,
       if(empty(b), 0, b[1].price) AS best_bid, if(empty(a), 1, a[1].price) AS best_ask,
       arraySlice(b, 1, {depth:UInt32}) AS bids, arraySlice(a, 1, {depth:UInt32}) AS asks
FROM (
  SELECT market, t, bids AS b, asks AS a FROM book_snapshots
  WHERE asset_id = {asset_id:String} AND is_checkpoint = 0
    AND t >= fromUnixTimestamp64Milli({since:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({until:Int64}, 'UTC')
  ORDER BY t, seq
  LIMIT {limit:UInt32}
)
${JSON_SETTINGS}`;

/** The exchange's own snapshots (`book` events, not checkpoints) in [since, until], ascending. */
export async function exchangeSnapshots(
  engine: Engine,
  q: { assetId: string; since: number; until: number; limit: number; depth: number },
  signal?: AbortSignal,
): Promise<Book[]> {
  return engine.rows<Book>(SNAPSHOTS_SQL, {
    params: { asset_id: q.assetId, since: clamp(q.since), until: clamp(q.until), limit: q.limit, depth: q.depth },
    signal,
  });
}

/**
 * Books sampled at since, since + interval, … ≤ until, starting at the first point on or after the
 * asset's first book, at most `limit` of them, in one query:
 * 1. one stream, in (t, seq) order, of the snapshots and deltas from the snapshot that precedes the
 *    first point up to the last point, plus the points themselves (sorting after any event at the
 *    same millisecond); a running max gives every row the key of the snapshot before it (its
 *    segment; the zero key before the first snapshot);
 * 2. per segment: its snapshot's levels, its deltas and its points;
 * 3. per point: the segment's snapshot levels and its deltas up to the point, last value per
 *    (side, price) by (t, seq), as applyDeltas does.
 */
const SAMPLED_SQL = `
WITH
  {since:Int64} AS since_ms,
  {interval:Int64} AS step,
  (SELECT min(ms) FROM (
     SELECT toUnixTimestamp64Milli(t) AS ms FROM (SELECT t FROM book_snapshots WHERE asset_id = {asset_id:String} ORDER BY t, seq LIMIT 1)
     UNION ALL
     SELECT toUnixTimestamp64Milli(t) FROM (SELECT t FROM ticks WHERE asset_id = {asset_id:String} AND event = 'price_change' ORDER BY t, seq LIMIT 1))) AS first_ms,
  greatest(0, intDiv(first_ms - since_ms + step - 1, step)) AS k0,
  arrayMap(i -> since_ms + (k0 + i) * step,
           range(toUInt32(greatest(0, least({limit:Int64}, intDiv({until:Int64} - since_ms, step) - k0 + 1))))) AS points,
  fromUnixTimestamp64Milli(points[1], 'UTC') AS p_first,
  fromUnixTimestamp64Milli(points[-1], 'UTC') AS p_last,
  assumeNotNull((SELECT (t, seq) FROM book_snapshots WHERE asset_id = {asset_id:String} AND t <= p_first ORDER BY t DESC, seq DESC LIMIT 1)) AS start_key,
  (toDateTime64(0, 3, 'UTC'), toUInt64(0)) AS no_snapshot
SELECT market, {asset_id:String} AS asset_id, timestamp, datetime, best_bid, best_ask,
       arraySlice(all_bids, 1, {depth:UInt32}) AS bids, arraySlice(all_asks, 1, {depth:UInt32}) AS asks
FROM (
  SELECT p, ${BOOK_COLUMNS}
  FROM (
    SELECT p, l.1 AS side, l.2 AS price, argMax(l.3, k) AS size, max(k) AS last, argMax(m, k) AS market
    FROM (
      SELECT p, e.1 AS k, e.2 AS m, e.3 AS ls
      FROM (
        SELECT seg,
               anyIf(levels, kind = 0) AS snap_levels,
               anyIf(market, kind = 0) AS snap_market,
               groupArrayIf(((t, seq), market, levels), kind = 1 AND (t, seq) > seg) AS deltas,
               groupArrayIf(t, kind = 2) AS seg_points
        FROM (
          SELECT kind, t, seq, market, levels,
                 max(if(kind = 0, (t, seq), no_snapshot)) OVER (ORDER BY t, seq, kind ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS seg
          FROM (
            SELECT 0 AS kind, t, seq, market,
                   arrayConcat([(2, 0., 0.)], arrayMap(x -> (0, x.1, x.2), bids), arrayMap(x -> (1, x.1, x.2), asks)) AS levels
            FROM book_snapshots
            WHERE asset_id = {asset_id:String} AND t >= start_key.1 AND t <= p_last AND (t, seq) >= start_key
            UNION ALL
            SELECT 1, t, seq, market, arrayMap(s -> (s, price, size), ${DELTA_SIDES})
            FROM ticks
            WHERE asset_id = {asset_id:String} AND event = 'price_change' AND t >= start_key.1 AND t <= p_last AND (t, seq) > start_key
            UNION ALL
            SELECT 2, fromUnixTimestamp64Milli(arrayJoin(points), 'UTC'), 18446744073709551615, '', []
          )
        )
        GROUP BY seg
        HAVING notEmpty(seg_points)
      )
      ARRAY JOIN seg_points AS p
      ARRAY JOIN arrayConcat(if(seg = no_snapshot, [], [(seg, snap_market, snap_levels)]), arrayFilter(d -> d.1.1 <= p, deltas)) AS e
    )
    ARRAY JOIN ls AS l
    GROUP BY p, side, price
  )
  GROUP BY p
  ORDER BY p
)
${JSON_SETTINGS}`;

export async function sampledBooks(
  engine: Engine,
  q: { assetId: string; since: number; until: number; interval: number; limit: number; depth: number },
  signal?: AbortSignal,
): Promise<Book[]> {
  return engine.rows<Book>(SAMPLED_SQL, {
    params: { asset_id: q.assetId, since: clamp(q.since), until: clamp(q.until), interval: q.interval, limit: q.limit, depth: q.depth },
    signal,
  });
}

/**
 * One point per `fidelity`-second bucket with ticks: the midpoint of the best prices the bucket's
 * last tick (by t, then arrival) carries, which describe the book after it.
 */
const PRICES_HISTORY_SQL = `
SELECT intDiv(toUnixTimestamp64Milli(t), {fidelity:UInt32} * 1000) * {fidelity:UInt32} AS bucket,
       round(argMax((best_bid + best_ask) / 2, (t, seq)), ${PRICE_DECIMALS}) AS p
FROM ticks
WHERE asset_id = {asset_id:String}
  AND t >= fromUnixTimestamp64Milli({start:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({end:Int64}, 'UTC')
GROUP BY bucket
ORDER BY bucket
LIMIT {limit:UInt32}
${JSON_SETTINGS}`;

export async function pricesHistory(
  engine: Engine,
  q: { assetId: string; start: number; end: number; fidelity: number; limit: number },
  signal?: AbortSignal,
): Promise<{ t: number; p: number }[]> {
  const rows = await engine.rows<{ bucket: number; p: number }>(PRICES_HISTORY_SQL, {
    params: { asset_id: q.assetId, start: clamp(q.start), end: clamp(q.end), fidelity: q.fidelity, limit: q.limit },
    signal,
  });
  return rows.map((r) => ({ t: r.bucket, p: r.p }));
}
