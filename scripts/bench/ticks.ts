import { get } from 'node:http';
import { candlesSql } from '../../src/queries/ohlcv.js';
import { exportQuery, pageQuery, type StreamQuery } from '../../src/queries/ticks.js';
import type { Engine } from '../../src/clickhouse/engine.js';
import type { BenchContext, BenchRow } from './types.js';

/**
 * Issue 5's workloads: exports, a 100k-tick page, candles and market listings, each measured on the
 * service over HTTP and on the raw engine running the same SQL in the same run.
 */
interface Transfer {
  bytes: number;
  ttfbMs: number;
  totalMs: number;
  /** Service only: peak RSS growth over the RSS before the request. */
  rssGrowth?: number;
}

const MB = 1e6;
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Reads a whole HTTP response as fast as the socket allows, sampling the service's RSS. */
function httpTransfer(ctx: BenchContext, path: string): Promise<Transfer> {
  return new Promise((resolve, reject) => {
    const before = ctx.serviceRss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, ctx.serviceRss())), 20);
    const started = performance.now();
    let ttfb = 0;
    let bytes = 0;
    get(`${ctx.service.url}${path}`, { headers: { authorization: `Bearer ${ctx.service.apiKey}` } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`${path}: HTTP ${res.statusCode}`));
      res.on('data', (chunk: Buffer) => {
        if (!ttfb) ttfb = performance.now() - started;
        bytes += chunk.length;
      });
      res.on('end', () => {
        clearInterval(sampler);
        peak = Math.max(peak, ctx.serviceRss());
        resolve({ bytes, ttfbMs: ttfb, totalMs: performance.now() - started, rssGrowth: peak - before });
      });
      res.on('error', reject);
    }).on('error', reject);
  });
}

async function engineTransfer(engine: Engine, q: StreamQuery): Promise<Transfer> {
  const started = performance.now();
  let ttfb = 0;
  let bytes = 0;
  for await (const chunk of engine.stream(q.sql, q.format, { params: q.params })) {
    if (!ttfb) ttfb = performance.now() - started;
    bytes += (chunk as Buffer).length;
  }
  return { bytes, ttfbMs: ttfb, totalMs: performance.now() - started };
}

async function timeMs(fn: () => Promise<unknown>, runs: number): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return median(times);
}

const qs = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();

export async function benchTicks(ctx: BenchContext): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const big = ctx.dataset.largest;
  const range = { asset_id: big.asset_id, start: big.start, end: big.end };

  for (const format of ['csv', 'jsonl'] as const) {
    const path = `/v1/ticks/export?${qs({ ...range, format })}`;
    const q = exportQuery(range, format);
    // Alternate raw and service twice and keep each side's best run: the same warm caches for both.
    const raw: Transfer[] = [];
    const svc: Transfer[] = [];
    for (let i = 0; i < 2; i++) {
      raw.push(await engineTransfer(ctx.engine, q));
      svc.push(await httpTransfer(ctx, path));
    }
    const r = raw.reduce((a, b) => (b.totalMs < a.totalMs ? b : a));
    const s = svc.reduce((a, b) => (b.totalMs < a.totalMs ? b : a));
    const rowsPerS = (t: Transfer) => big.ticks / (t.totalMs / 1000);
    const mbPerS = (t: Transfer) => t.bytes / MB / (t.totalMs / 1000);
    rows.push({
      workload: `export ${format.toUpperCase()}, ${fmt(big.ticks)} ticks (throughput)`,
      service: `${fmt(rowsPerS(s))} rows/s, ${fmt(mbPerS(s), 1)} MB/s`,
      engine: `${fmt(rowsPerS(r))} rows/s, ${fmt(mbPerS(r), 1)} MB/s`,
      ratio: `${(rowsPerS(s) / rowsPerS(r)).toFixed(2)} (target ≥ 0.9)`,
    });
    rows.push({
      workload: `export ${format.toUpperCase()}: time to first byte; service RSS growth`,
      service: `${fmt(s.ttfbMs, 1)} ms; +${fmt(Math.max(...svc.map((t) => t.rssGrowth ?? 0)) / MB)} MB`,
      engine: `${fmt(r.ttfbMs, 1)} ms`,
      ratio: `TTFB ≤ 100 ms, RSS ≤ +150 MB`,
    });
  }

  const pageParams = { ...range, limit: 100_000 };
  const page = pageQuery(range, 100_000);
  const pageRaw = await timeMs(() => engineTransfer(ctx.engine, page), 5);
  const pageSvc = await timeMs(() => httpTransfer(ctx, `/v1/ticks?${qs(pageParams)}`), 5);
  rows.push({
    workload: '/v1/ticks limit 100000 (median of 5)',
    service: `${fmt(pageSvc, 1)} ms`,
    engine: `${fmt(pageRaw, 1)} ms`,
    ratio: `${(pageSvc / pageRaw).toFixed(2)}× engine (target ≤ 1.3)`,
  });

  for (const resolution of ['1m', '1d'] as const) {
    const params = { asset_id: big.asset_id, resolution, start: big.start, limit: 1000 };
    const svc = await timeMs(() => httpTransfer(ctx, `/v1/ohlcv?${qs(params)}`), 10);
    const rollup = await timeMs(
      () => ctx.engine.rows(candlesSql(resolution, 'first'), { params: { asset_id: big.asset_id, from: big.start, to: big.end, limit: 1000 } }),
      10,
    );
    const fromTicks = await timeMs(() => ctx.engine.rows(candlesFromTicksSql(resolution), { params: { asset_id: big.asset_id, from: big.start, limit: 1000 } }), 3);
    rows.push({
      workload: `/v1/ohlcv ${resolution}, 1000 candles (median of 10)`,
      service: `${fmt(svc, 1)} ms`,
      engine: `${fmt(rollup, 1)} ms rollup SQL; ${fmt(fromTicks, 1)} ms from raw ticks`,
      ratio: `${(fromTicks / svc).toFixed(1)}× faster than raw ticks (target ≤ 30 ms, ≥ 10×)`,
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
function candlesFromTicksSql(resolution: '1m' | '1d'): string {
  const interval = resolution === '1m' ? 'INTERVAL 1 MINUTE' : 'INTERVAL 1 DAY';
  return `SELECT toUnixTimestamp(toStartOfInterval(t, ${interval}, 'UTC')) * 1000 AS timestamp,
  argMin(best_bid, (t, seq)) AS open, max(best_bid) AS high, min(best_bid) AS low, argMax(best_bid, (t, seq)) AS close, count() AS volume
FROM ticks
WHERE asset_id = {asset_id:String} AND event = 'price_change' AND t >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')
GROUP BY timestamp
ORDER BY timestamp
LIMIT {limit:UInt32}`;
}
