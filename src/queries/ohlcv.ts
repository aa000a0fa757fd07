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
 * The bounded reads touch a few thousand rows spread over every monthly part: one thread and no
 * per-part buffering before the in-order merge measured ~30% faster than the defaults (chDB 26.7).
 */
const SMALL_READ = 'read_in_order_use_buffering = 0, max_threads = 1';

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
 * candles_1h (argMin/argMax states by (t, seq) keep open/close exact). toStartOfInterval counts from
 * the Unix epoch in UTC, so buckets are multiples of the resolution, and since `from` is aligned
 * every bucket read is read whole.
 *
 * The scan is bounded first: a cheap in-order read of bucket keys (LIMIT 1 BY the coarse bucket,
 * stopping after `limit` of them) finds the edge of the answer, so 1,000 candles never aggregate
 * the asset's whole history.
 */
export function candlesSql(resolution: Resolution, take: 'first' | 'last'): string {
  const interval = INTERVALS[resolution].sql;
  const table = INTERVALS[resolution].ms >= 3_600_000 ? 'candles_1h' : 'candles_1m';
  const inRange = `asset_id = {asset_id:String}
  AND bucket >= toDateTime(intDiv({from:Int64}, 1000), 'UTC')
  AND bucket < toDateTime(intDiv({to:Int64}, 1000), 'UTC') + ${interval}`;
  const edge = `SELECT ${take === 'first' ? 'max' : 'min'}(b) FROM (
    SELECT toStartOfInterval(bucket, ${interval}, 'UTC') AS b FROM ${table}
    WHERE ${inRange}
    ORDER BY bucket ${take === 'first' ? 'ASC' : 'DESC'}
    LIMIT 1 BY b
    LIMIT {limit:UInt32})`;
  const bounded = take === 'first' ? `bucket < (${edge}) + ${interval}` : `bucket >= (${edge})`;
  return `SELECT toUnixTimestamp(b) * 1000 AS timestamp, o AS open, h AS high, l AS low, c AS close, v AS volume
FROM (
  SELECT toStartOfInterval(bucket, ${interval}, 'UTC') AS b,
    argMinMerge(open) AS o, max(high) AS h, min(low) AS l, argMaxMerge(close) AS c, sum(volume) AS v
  FROM ${table}
  WHERE ${inRange}
    AND ${bounded}
  GROUP BY b
)
ORDER BY timestamp ASC
SETTINGS ${SMALL_READ}`;
}

export async function queryCandles(engine: Engine, q: CandleQuery, signal?: AbortSignal): Promise<Candle[]> {
  return engine.rows<Candle>(candlesSql(q.resolution, q.take), {
    params: { asset_id: q.asset_id, from: q.from, to: q.to, limit: q.limit },
    signal,
  });
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
