import type { Engine } from '../clickhouse/engine.js';
import { BINARY_EVENT_COLUMNS } from './book-event-columns.js';
import { MAX_TIME_MS, POINT_READ } from './orderbook.js';

/**
 * The reads of the book segment cache (src/book-history/cache.ts): an asset's snapshot times, the
 * events of known segments, the events from the snapshot before an instant on, a point read, and the
 * late-data notices. Book events come as RowBinary (BookEventDecoder) with {usual_market} bound.
 */

/** The distinct times (ms) of an asset's snapshots after {after}, ascending (020_book_snapshot_keys.sql). */
const SNAPSHOT_TIMES_SQL = `
SELECT DISTINCT toUnixTimestamp64Milli(t)
FROM book_snapshot_keys
WHERE asset_id = {asset_id:String} AND t > fromUnixTimestamp64Milli({after:Int64}, 'UTC')
ORDER BY 1
SETTINGS ${POINT_READ}`;

/** The times of the snapshots of `assetId` after `after` (ms; -1: all), ascending and distinct. */
export async function snapshotTimes(engine: Engine, assetId: string, after: number, signal?: AbortSignal): Promise<Float64Array> {
  const bytes = await engine.bytes(SNAPSHOT_TIMES_SQL, 'RowBinary', { params: { asset_id: assetId, after }, signal });
  const times = new Float64Array(bytes.length / 8);
  for (let i = 0; i < times.length; i++) times[i] = Number(bytes.readBigInt64LE(8 * i));
  return times;
}

/** A key range of one segment: the events with start ≤ t < end (ms; end Infinity: the newest). */
export interface EventRange {
  start: number;
  end: number;
}

/**
 * The events of several key ranges of one asset, in (t, seq) order, at most {limit}: one read of the
 * primary key's ranges, whose fixed cost (parsing, planning, opening the part: ~2.5 ms of the ~3.5
 * a one-segment read takes here) all of them share. The text depends only on how many ranges there
 * are; their bounds are parameters.
 */
const rangesSql = (count: number) => `
SELECT ${BINARY_EVENT_COLUMNS}
FROM book_events
WHERE asset_id = {asset_id:String} AND (${Array.from(
  { length: count },
  (_, i) => `(t >= fromUnixTimestamp64Milli({s${i}:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({e${i}:Int64}, 'UTC'))`,
).join(' OR ')})
ORDER BY t, seq
LIMIT {limit:UInt64}
SETTINGS ${POINT_READ}`;

const RANGES_SQL = new Map<number, string>();

/** The events of `ranges` (sorted, disjoint), at most `limit` of them, as RowBinary. */
export function readRanges(
  engine: Engine,
  q: { assetId: string; ranges: readonly EventRange[]; limit: number; usualMarket: string },
  signal?: AbortSignal,
): Promise<Buffer> {
  const count = q.ranges.length;
  let sql = RANGES_SQL.get(count);
  if (!sql) RANGES_SQL.set(count, (sql = rangesSql(count)));
  const params: Record<string, unknown> = { asset_id: q.assetId, limit: q.limit, usual_market: q.usualMarket };
  q.ranges.forEach((r, i) => {
    params[`s${i}`] = r.start;
    // Whole milliseconds: t < end is t ≤ end - 1. The newest range runs to the last instant a time can hold.
    params[`e${i}`] = Math.min(r.end - 1, MAX_TIME_MS);
  });
  return engine.bytes(sql, 'RowBinary', { params, signal });
}

/**
 * The latest snapshot at or before {at} (none: the asset's first event) and the events after it up
 * to {last}, in (t, seq) order, at most `limit` (a fill streams them all: one read of the whole asset
 * cost half the engine CPU of 65,536-event reads): one primary-key range read. No sort key beyond
 * the table's: `kind` as a third one made the engine sort the whole rest of the asset (178 ms instead
 * of 14 ms at 4,096 rows).
 *
 * A checkpoint shares the (t, seq) of the change it follows, and already holds it. At the first
 * snapshot that change is left out by the WHERE (it could come before its snapshot in the result).
 * At later ones it lands either just before its snapshot, at the previous segment's end (where no
 * instant of that segment applies it), or just after it, where applying it sets a level to the size
 * the snapshot already gives it: the same book either way.
 */
export const segmentsSql = (limit: number | null) => `
WITH (SELECT (t, seq) FROM book_events
      WHERE asset_id = {asset_id:String} AND kind != 'price_change' AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
      ORDER BY t DESC, seq DESC LIMIT 1) AS k
SELECT ${BINARY_EVENT_COLUMNS}
FROM book_events
WHERE asset_id = {asset_id:String} AND t >= assumeNotNull(k).1 AND t <= fromUnixTimestamp64Milli({last:Int64}, 'UTC')
  AND (t > assumeNotNull(k).1 OR seq > assumeNotNull(k).2 OR (seq = assumeNotNull(k).2 AND kind != 'price_change'))
ORDER BY t, seq
${limit === null ? '' : `LIMIT ${limit}`}
SETTINGS ${POINT_READ}`;

/**
 * The last `events` events up to {at}, newest first (they hold its latest snapshot when fewer
 * changes followed it), and the first event after {at}. Each branch keeps its order; a row after
 * {at} tells itself apart by its time.
 */
export const pointSql = (events: number) => `
SELECT * FROM (
  SELECT ${BINARY_EVENT_COLUMNS} FROM book_events
  WHERE asset_id = {asset_id:String} AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
  ORDER BY t DESC, seq DESC LIMIT ${events})
UNION ALL
SELECT * FROM (
  SELECT ${BINARY_EVENT_COLUMNS} FROM book_events
  WHERE asset_id = {asset_id:String} AND t > fromUnixTimestamp64Milli({at:Int64}, 'UTC')
  ORDER BY t, seq LIMIT 1)
SETTINGS ${POINT_READ}`;

/** Notices ever written, all assets: part metadata, no data read; merges keep the sum. */
const NOTICES_TOTAL = `(SELECT sum(rows) FROM system.parts WHERE database = currentDatabase() AND table = 'book_writes' AND active)`;

const TOTAL_SQL = `SELECT ${NOTICES_TOTAL} AS total SETTINGS output_format_json_quote_64bit_integers = 0`;

/** Notices ever written (010_book_writes.sql), all assets. */
export async function noticesTotal(engine: Engine, signal?: AbortSignal): Promise<number> {
  return Number((await engine.rows<{ total: number }>(TOTAL_SQL, { signal }))[0].total);
}

/** The spans of the notices touching [lo, hi], and the total when other processes may write. */
const spansSql = (withTotal: boolean) => `
SELECT ${withTotal ? NOTICES_TOTAL : '0'} AS total, groupArray((toUnixTimestamp64Milli(t_min), toUnixTimestamp64Milli(t_max))) AS spans
FROM book_writes
WHERE asset_id = {asset_id:String} AND t_min <= fromUnixTimestamp64Milli({hi:Int64}, 'UTC') AND t_max >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC')
SETTINGS output_format_json_quote_64bit_integers = 0, ${POINT_READ}`;

/** The spans [min, max] of the notices of `assetId` touching [lo, hi], and (withTotal) the notices ever written. */
export async function noticeSpans(
  engine: Engine,
  q: { assetId: string; lo: number; hi: number; withTotal: boolean },
  signal?: AbortSignal,
): Promise<{ total: number; spans: [number, number][] }> {
  const [row] = await engine.rows<{ total: number; spans: [number, number][] }>(spansSql(q.withTotal), {
    params: { asset_id: q.assetId, lo: q.lo, hi: q.hi },
    signal,
  });
  return { total: Number(row.total), spans: row.spans };
}

/** How many notices touch one segment's span. */
const COUNT_SQL = `
SELECT count() AS n
FROM book_writes
WHERE asset_id = {asset_id:String} AND t_min <= fromUnixTimestamp64Milli({hi:Int64}, 'UTC') AND t_max >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC')
SETTINGS output_format_json_quote_64bit_integers = 0, ${POINT_READ}`;

export async function noticesTouching(engine: Engine, q: { assetId: string; lo: number; hi: number }, signal?: AbortSignal): Promise<number> {
  const [{ n }] = await engine.rows<{ n: number }>(COUNT_SQL, { params: { asset_id: q.assetId, lo: q.lo, hi: q.hi }, signal });
  return Number(n);
}
