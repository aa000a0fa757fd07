import type { Engine } from '../clickhouse/engine.js';

export const RESOLUTIONS = ['1m', '5m', '15m', '1h', '4h', '1d'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

/** Bucket length per resolution; also the only SQL text chosen by a user value (an enum). */
const INTERVALS: Record<Resolution, { sql: string; ms: number }> = {
  '1m': { sql: 'INTERVAL 1 MINUTE', ms: 60_000 },
  '5m': { sql: 'INTERVAL 5 MINUTE', ms: 300_000 },
  '15m': { sql: 'INTERVAL 15 MINUTE', ms: 900_000 },
  '1h': { sql: 'INTERVAL 1 HOUR', ms: 3_600_000 },
  '4h': { sql: 'INTERVAL 4 HOUR', ms: 14_400_000 },
  '1d': { sql: 'INTERVAL 1 DAY', ms: 86_400_000 },
};

/**
 * One window is one key range of one asset in one or two partitions, a few thousand rows at most:
 * one thread reads it faster than a pool starts (chDB 26.7).
 */
const SMALL_READ = 'max_threads = 1';

export interface Candle {
  timestamp: number;
  open: number;
  high: number;
  low: number;
  close: number;
  volume: number;
}

export interface CandleQuery {
  asset_id: string;
  resolution: Resolution;
  /** First bucket start (ms, already floored to the resolution), inclusive. */
  from: number;
  /** Last allowed bucket start (ms, floored to the resolution), inclusive. */
  to: number;
  limit: number;
  /** 'first': the first `limit` buckets from `from`; 'last': the last `limit` buckets up to `to`. */
  take: 'first' | 'last';
}

export function floorToResolution(ms: number, resolution: Resolution): number {
  const step = INTERVALS[resolution].ms;
  return Math.floor(ms / step) * step;
}

/**
 * Candles from the rollups only, never raw ticks: 1m/5m/15m merge candles_1m, 1h/4h/1d merge
 * candles_1h (open/close keyed by (t, seq), clickhouse/042_candles_keyed.sql, keep them exact). toStartOfInterval counts from
 * the Unix epoch in UTC, so buckets are multiples of the resolution; every window below starts and
 * ends on a bucket boundary, so every bucket it reads it reads whole.
 *
 * The buckets of [lo, hi) (ms), `take` 'first' in ascending, 'last' in descending order, at most
 * `limit`. One key range: the primary key and the partitions' min-max indexes skip everything else.
 */
/** The best_bid a candle's open or close key holds (its low 64 bits, clickhouse/042_candles_keyed.sql). */
const priceOf = (key: string) => `reinterpretAsFloat64(toUInt64(bitAnd(${key}, toUInt256('18446744073709551615'))))`;

export function candlesSql(resolution: Resolution, take: 'first' | 'last'): string {
  const interval = INTERVALS[resolution].sql;
  const table = INTERVALS[resolution].ms >= 3_600_000 ? 'candles_1h' : 'candles_1m';
  return `SELECT toUnixTimestamp(b) * 1000 AS timestamp, o AS open, h AS high, l AS low, c AS close, v AS volume
FROM (
  SELECT toStartOfInterval(bucket, ${interval}, 'UTC') AS b,
    ${priceOf('min(open)')} AS o, max(high) AS h, min(low) AS l, ${priceOf('max(close)')} AS c, sum(volume) AS v
  FROM ${table}
  WHERE asset_id = {asset_id:String}
    AND bucket >= toDateTime(intDiv({lo:Int64}, 1000), 'UTC')
    AND bucket < toDateTime(intDiv({hi:Int64}, 1000), 'UTC')
  GROUP BY b
)
ORDER BY timestamp ${take === 'first' ? 'ASC' : 'DESC'}
LIMIT {limit:UInt32}
SETTINGS ${SMALL_READ}`;
}

/**
 * The answer is read in windows growing from the end it starts at: the first holds exactly `limit`
 * buckets' time, all an asset trading every bucket needs, and each next one (when buckets were
 * empty) twice the last, so a sparse or distant history costs a few more small reads. A single read
 * bounded by a search for the answer's far edge (the 1,000th bucket) cost 40-130 ms for 1,000 1m
 * candles: that search read in order, so it opened every monthly part of the asset's history and read
 * a granule of each (38 parts on the bench's 3-year asset), where the answer itself is one granule.
 */
export async function queryCandles(engine: Engine, q: CandleQuery, signal?: AbortSignal): Promise<Candle[]> {
  const step = INTERVALS[q.resolution].ms;
  const sql = candlesSql(q.resolution, q.take);
  // Bucket starts from..to inclusive: the exclusive end is the bucket after `to`.
  const [from, end] = [q.from, q.to + step];
  const out: Candle[] = [];
  let width = q.limit * step;
  if (q.take === 'first') {
    for (let lo = from; lo < end && out.length < q.limit; lo += width, width *= 2) {
      const hi = Math.min(lo + width, end);
      out.push(...(await engine.rows<Candle>(sql, { params: { asset_id: q.asset_id, lo, hi, limit: q.limit - out.length }, signal })));
    }
    return out;
  }
  for (let hi = end; hi > from && out.length < q.limit; hi -= width, width *= 2) {
    const lo = Math.max(hi - width, from);
    out.push(...(await engine.rows<Candle>(sql, { params: { asset_id: q.asset_id, lo, hi, limit: q.limit - out.length }, signal })));
  }
  return out.reverse();
}

/** The newest 1m bucket of the asset at or before `to` (ms), or null: tells "no data" from "data older than the window". */
export async function newestCandleBefore(engine: Engine, asset_id: string, to: number, signal?: AbortSignal): Promise<number | null> {
  const rows = await engine.rows<{ t: number }>(
    `SELECT toUnixTimestamp(bucket) * 1000 AS t FROM candles_1m
WHERE asset_id = {asset_id:String} AND bucket <= toDateTime(intDiv({to:Int64}, 1000), 'UTC')
ORDER BY bucket DESC LIMIT 1`,
    { params: { asset_id, to }, signal },
  );
  return rows.length ? Number(rows[0].t) : null;
}
