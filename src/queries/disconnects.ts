import type { Engine } from '../clickhouse/engine.js';

/**
 * When the recorder lost its connection to any of `assets` within [lo, hi) (Unix ms): the distinct
 * times of their `close` capture records (clickhouse/008_coverage.sql), ascending. One asset's socket
 * serves many assets, so one loss is one time. A few rows per recorder outage: a bounded result.
 */
const DISCONNECTS_SQL = `
SELECT DISTINCT toUnixTimestamp64Milli(t) AS ms
FROM capture_events
WHERE asset_id IN {ids:Array(String)} AND kind = 'close'
  AND t >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC') AND t < fromUnixTimestamp64Milli({hi:Int64}, 'UTC')
ORDER BY ms
LIMIT 100000`;

export async function disconnectTimes(engine: Engine, q: { assets: string[]; lo: number; hi: number }, signal?: AbortSignal): Promise<number[]> {
  const rows = await engine.compactRows<[number]>(DISCONNECTS_SQL, { params: { ids: q.assets, lo: q.lo, hi: q.hi }, signal });
  return rows.map(([ms]) => ms);
}
