import { queryCandles } from '../../src/queries/ohlcv.js';
import { httpTransfer, qs, timeMs } from './ticks.js';
import type { BenchContext, BenchRow } from './types.js';

/**
 * Issue 5's small answers on the largest asset, split from ticks.ts so that `BENCH_ONLY=candles` runs
 * them without the exports (issue 31): 1,000 candles at 1m, 1h and 1d (issue 39: ≤ 15 ms each) against
 * the same candles from raw ticks, and the market listing against the asset_stats merge alone.
 */
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export async function benchCandles(ctx: BenchContext): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const big = ctx.dataset.largest;
  for (const resolution of ['1m', '1h', '1d'] as const) {
    const params = { asset_id: big.asset_id, resolution, start: big.start, limit: 1000 };
    const svc = await timeMs(() => httpTransfer(ctx, `/v1/ohlcv?${qs(params)}`), 10);
    const rollup = await timeMs(
      // The service's own reads of the rollup (one window here), without HTTP and auth.
      () => queryCandles(ctx.engine, { asset_id: big.asset_id, resolution, from: big.start, to: big.end, limit: 1000, take: 'first' }),
      10,
    );
    const fromTicks = await timeMs(
      () => ctx.engine.rows(candlesFromTicksSql(resolution), { params: { asset_id: big.asset_id, from: big.start, limit: 1000 } }),
      3,
    );
    rows.push({
      workload: `/v1/ohlcv ${resolution}, 1000 candles (median of 10)`,
      service: `${fmt(svc, 1)} ms`,
      engine: `${fmt(rollup, 1)} ms rollup reads; ${fmt(fromTicks, 1)} ms from raw ticks`,
      ratio: `${(fromTicks / svc).toFixed(1)}× faster than raw ticks; ${svc <= 15 ? 'meets' : 'misses'} ≤ 15 ms (issue 39)`,
    });
  }

  const marketsSvc = await timeMs(() => httpTransfer(ctx, '/v1/markets'), 10);
  const marketsRaw = await timeMs(
    () =>
      ctx.engine.rows(
        `SELECT s.asset_id, any(s.market), min(s.first_seen), max(s.last_seen), sum(s.total_ticks) AS n
FROM asset_stats AS s GROUP BY s.asset_id ORDER BY n DESC, s.asset_id LIMIT 100`,
      ),
    10,
  );
  rows.push({
    workload: '/v1/markets (median of 10)',
    service: `${fmt(marketsSvc, 1)} ms`,
    engine: `${fmt(marketsRaw, 1)} ms (asset_stats merge alone)`,
    ratio: `${(marketsSvc / marketsRaw).toFixed(2)}× engine`,
  });
  return rows;
}

/** The same candles as /v1/ohlcv computed from raw ticks, as a naive implementation would. */
function candlesFromTicksSql(resolution: '1m' | '1h' | '1d'): string {
  const interval = { '1m': 'INTERVAL 1 MINUTE', '1h': 'INTERVAL 1 HOUR', '1d': 'INTERVAL 1 DAY' }[resolution];
  return `SELECT toUnixTimestamp(toStartOfInterval(t, ${interval}, 'UTC')) * 1000 AS timestamp,
  argMin(best_bid, (t, seq)) AS open, max(best_bid) AS high, min(best_bid) AS low, argMax(best_bid, (t, seq)) AS close, count() AS volume
FROM ticks
WHERE asset_id = {asset_id:String} AND event = 'price_change' AND t >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')
GROUP BY timestamp
ORDER BY timestamp
LIMIT {limit:UInt32}`;
}
