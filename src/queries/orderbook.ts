import type { Engine } from '../clickhouse/engine.js';

/**
 * Order book reconstruction (INGEST.md §2), one engine query per call.
 *
 * The book at T = the latest snapshot (exchange `book` or checkpoint) with t ≤ T, overridden by the
 * last `price_change` per (side, price) after it, by (t, seq), with t ≤ T. Both reads are primary-key
 * range reads of one asset; checkpoints bound how many deltas the second one returns.
 *
 * A tick does not record which side of the book a `price_change` touched (its `side` is the outcome
 * label), so the side is derived from the best prices the tick carries, which describe the book
 * after the change. In a book that is never crossed this is exact:
 * - size > 0 at p: the level exists after the change, so p ≤ best_bid means a bid (every ask is
 *   ≥ best_ask > best_bid) and otherwise an ask;
 * - size 0 at p: neither side holds p afterwards (the removed level's side just lost it, and the
 *   other side could not hold p while it was on this side), so the removal applies to both sides.
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

export interface TopOfBook {
  asset_id: string;
  timestamp: number;
  datetime: string;
  best_bid: number;
  best_ask: number;
}

/** The deltas of one asset after its snapshot `snap` (a Nullable tuple: t, seq, market, bids, asks) up to `at`. */
const DELTAS = `
  SELECT arrayJoin(if(size = 0, [0, 1], [if(price <= best_bid, 0, 1)])) AS side, price, size, (t, seq) AS k, market
  FROM ticks
  WHERE asset_id = {asset_id:String} AND event = 'price_change'
    AND t >= assumeNotNull(snap).1 AND t <= at
    AND (snap IS NULL OR (t, seq) > (assumeNotNull(snap).1, assumeNotNull(snap).2))`;

/**
 * One row per (side, price) ever touched since the snapshot: its final size and the key of the
 * last event that touched it. Side 0 = bids, 1 = asks, 2 = a marker row for the snapshot itself, so
 * a snapshot of an empty book still counts as a book.
 */
const LEVELS = `
  SELECT side, price, argMax(size, k) AS size, max(k) AS last, argMax(market, k) AS market
  FROM (
    ${DELTAS}
    UNION ALL
    SELECT l.1 AS side, l.2 AS price, l.3 AS size, (assumeNotNull(snap).1, assumeNotNull(snap).2) AS k, assumeNotNull(snap).3 AS market
    FROM system.one
    ARRAY JOIN arrayConcat([(2, 0., 0.)], arrayMap(x -> (0, x.1, x.2), assumeNotNull(snap).4), arrayMap(x -> (1, x.1, x.2), assumeNotNull(snap).5)) AS l
    WHERE snap IS NOT NULL
  )
  GROUP BY side, price`;

const SNAPSHOT_AT = `
  (SELECT (t, seq, market, bids, asks) FROM book_snapshots
   WHERE asset_id = {asset_id:String} AND t <= at
   ORDER BY t DESC, seq DESC LIMIT 1)`;

const PREFIX = `
WITH fromUnixTimestamp64Milli({at:Int64}, 'UTC') AS at, ${SNAPSHOT_AT} AS snap`;

const LEVEL = 'Tuple(price Float64, size Float64)';

/** Aggregates over LEVELS into the book's header and full sorted sides (`all_bids`, `all_asks`). */
const BOOK_COLUMNS = `
    argMax(market, last) AS market,
    {asset_id:String} AS asset_id,
    max(last).1 AS last_t,
    toUnixTimestamp64Milli(last_t) AS timestamp,
    toString(last_t) AS datetime,
    arrayReverseSort(x -> x.price, groupArrayIf(CAST((price, size), '${LEVEL}'), side = 0 AND size > 0)) AS all_bids,
    arraySort(x -> x.price, groupArrayIf(CAST((price, size), '${LEVEL}'), side = 1 AND size > 0)) AS all_asks,
    if(empty(all_bids), 0, all_bids[1].price) AS best_bid,
    if(empty(all_asks), 1, all_asks[1].price) AS best_ask`;

const JSON_SETTINGS = 'SETTINGS output_format_json_quote_64bit_integers = 0';

const BOOK_SQL = `${PREFIX}
SELECT market, asset_id, timestamp, datetime, best_bid, best_ask,
       arraySlice(all_bids, 1, {depth:UInt32}) AS bids, arraySlice(all_asks, 1, {depth:UInt32}) AS asks
FROM (SELECT ${BOOK_COLUMNS} FROM (${LEVELS}) HAVING count() > 0)
${JSON_SETTINGS}`;

const TOP_SQL = `${PREFIX}
SELECT asset_id, timestamp, datetime, best_bid, best_ask
FROM (SELECT ${BOOK_COLUMNS} FROM (${LEVELS}) HAVING count() > 0)
${JSON_SETTINGS}`;

const SIDE_SQL = `${PREFIX}
SELECT timestamp, if({side:String} = 'bids', all_bids, all_asks) AS levels
FROM (SELECT ${BOOK_COLUMNS} FROM (${LEVELS}) HAVING count() > 0)
${JSON_SETTINGS}`;

function clamp(at: number): number {
  return Math.min(at, MAX_TIME_MS);
}

/** The book at `at` (ms; null = latest) with at most `depth` levels per side, or null when there is none. */
export async function bookAt(engine: Engine, assetId: string, at: number | null, depth: number, signal?: AbortSignal): Promise<Book | null> {
  const rows = await engine.rows<Book>(BOOK_SQL, { params: { asset_id: assetId, at: clamp(at ?? MAX_TIME_MS), depth }, signal });
  return rows[0] ?? null;
}

/** Best bid and ask of the book at `at` (null = latest), or null when there is none. */
export async function topOfBookAt(engine: Engine, assetId: string, at: number | null, signal?: AbortSignal): Promise<TopOfBook | null> {
  const rows = await engine.rows<TopOfBook>(TOP_SQL, { params: { asset_id: assetId, at: clamp(at ?? MAX_TIME_MS) }, signal });
  return rows[0] ?? null;
}

/** Every level of one side of the book at `at`, best first, or null when there is no book. */
export async function bookSideAt(
  engine: Engine,
  assetId: string,
  at: number,
  side: 'bids' | 'asks',
  signal?: AbortSignal,
): Promise<{ timestamp: number; levels: Level[] } | null> {
  const rows = await engine.rows<{ timestamp: number; levels: Level[] }>(SIDE_SQL, { params: { asset_id: assetId, at: clamp(at), side }, signal });
  return rows[0] ?? null;
}

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
 * 3. per point: the segment's snapshot levels and its deltas up to the point, reduced like LEVELS.
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
            SELECT 1, t, seq, market, arrayMap(s -> (s, price, size), if(size = 0, [0, 1], [if(price <= best_bid, 0, 1)]))
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
       argMax((best_bid + best_ask) / 2, (t, seq)) AS p
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
