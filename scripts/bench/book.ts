import { Agent } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { cachingBookReader } from '../../src/book-history/reader.js';
import { runMigrations } from '../../src/clickhouse/migrations.js';
import { forwardQuery, MAX_TIME_MS } from '../../src/queries/orderbook.js';
import { exportQuery } from '../../src/queries/ticks.js';
import { processCpuMs } from './orderbook.js';
import { reconstructionQuery } from './reconstruction.js';
import { httpGet } from './shared.js';
import { engineTransfer, httpTransfer } from './ticks.js';
import type { BenchContext, BenchRow } from './types.js';

/**
 * Issue 14's workloads on the largest asset: the book dataset export (depth 10) against the raw
 * engine exporting the same range of ticks as CSV, and the raw engine's read of the book events the
 * export folds, alone (the most any export that reads them could reach); a backtest stepping
 * /v1/orderbook through time against the raw reconstruction query at the same instants; the
 * segment cache's memory, measured.
 */
const MB = 1e6;
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const qs = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();

export async function benchBookExport(ctx: BenchContext): Promise<BenchRow[]> {
  const big = ctx.dataset.largest;
  const range = { asset_id: big.asset_id, start: big.start, end: big.end };
  const raw = await engineTransfer(ctx.engine, exportQuery(range, 'csv'));
  const cpuBefore = processCpuMs(ctx.service.pid);
  const svc = await httpTransfer(ctx, `/v1/orderbook/export?${qs({ ...range, depth: 10, format: 'csv' })}`);
  // The service's CPU (all its threads: the fold, the engine's reading) against the wall time.
  const cores = (processCpuMs(ctx.service.pid) - cpuBefore) / svc.totalMs;
  const rawRowsPerS = big.ticks / (raw.totalMs / 1000);
  const rows = svc.lines - 1;
  const rowsPerS = rows / (svc.totalMs / 1000);
  // A grid of about five million rows, for memory over a long export.
  const interval = Math.ceil((big.end - big.start) / 5_000_000);
  const grid = await httpTransfer(ctx, `/v1/orderbook/export?${qs({ ...range, depth: 10, interval, format: 'csv' })}`);
  // The export's own read (orderbook.ts forwardQuery: the asset's book events in (t, seq) order, as
  // RowBinary) with nothing done with the bytes: no fold, no text, no socket. Its time alone bounds
  // the rows/s of the export.
  const [{ market, events }] = await ctx.engine.rows<{ market: string; events: string }>(
    'SELECT any(market) AS market, count() AS events FROM book_events WHERE asset_id = {asset_id:String}',
    { params: { asset_id: big.asset_id } },
  );
  const q = forwardQuery(big.asset_id, { ms: 0, seq: 0 }, MAX_TIME_MS, market);
  const read = await engineTransfer(ctx.engine, { sql: q.sql, format: 'RowBinary', params: q.params });
  const ceiling = rows / (read.totalMs / 1000);
  return [
    {
      workload: `book export depth 10 CSV, largest asset (${fmt(rows)} rows: every book-changing ms of ${fmt(big.ticks)} ticks)`,
      service:
        `${fmt(rowsPerS)} rows/s,` +
        ` ${fmt(svc.bytes / MB / (svc.totalMs / 1000), 1)} MB/s; TTFB ${fmt(svc.ttfbMs, 1)} ms; service CPU ${cores.toFixed(2)} cores`,
      engine: `${fmt(rawRowsPerS)} rows/s (same range of ticks as CSV)`,
      ratio: `${(rowsPerS / rawRowsPerS).toFixed(2)} (targets: ≥ 500,000 rows/s, ≥ 0.5, TTFB ≤ 200 ms)`,
    },
    {
      workload: `the same export's read alone: the raw engine reading its ${fmt(Number(events))} book events (RowBinary), nothing done with them`,
      service: '',
      engine: `${fmt(read.totalMs)} ms, ${fmt(read.bytes / MB)} MB: at most ${fmt(ceiling)} export rows/s`,
      ratio: `${(ceiling / rawRowsPerS).toFixed(2)} (the most an export folding these events reaches, against the same raw ticks CSV)`,
    },
    {
      workload: 'book export depth 10 CSV vs its read ceiling (the two rows above)',
      service: `${fmt(rowsPerS)} rows/s`,
      engine: `≤ ${fmt(ceiling)} rows/s`,
      ratio: `${(rowsPerS / ceiling).toFixed(2)} of the ceiling (issue 39 target ≥ 0.7)`,
    },
    {
      workload: `book export depth 10 CSV every ${fmt(interval)} ms: ${fmt(grid.lines - 1)} rows, service RSS growth`,
      service: `+${fmt((grid.rssGrowth ?? 0) / MB)} MB; ${fmt((grid.lines - 1) / (grid.totalMs / 1000))} rows/s; TTFB ${fmt(grid.ttfbMs, 1)} ms`,
      engine: '',
      ratio: 'target: RSS ≤ +150 MB over 5 M rows',
    },
  ];
}

/** 2,000 successive lookups one second apart, one client: a backtest. Fresh instants each run (other benches read random ones). */
export async function benchBacktest(ctx: BenchContext): Promise<BenchRow[]> {
  const asset = ctx.dataset.largest;
  const from = asset.start + Math.floor(Math.random() * (asset.end - asset.start - 3 * 86_400_000)) + 86_400_000;
  const instants = Array.from({ length: 2000 }, (_, i) => from + i * 1000);
  const url = new URL(ctx.service.url);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let started = performance.now();
  for (const at of instants) await httpGet(agent, url, `/v1/orderbook?asset_id=${asset.asset_id}&timestamp=${at}`, ctx.service.apiKey);
  const serviceRate = instants.length / ((performance.now() - started) / 1000);
  agent.destroy();
  started = performance.now();
  for (const at of instants) {
    const { sql, params } = reconstructionQuery(asset.asset_id, at);
    await ctx.engine.compactRows(sql, { params });
  }
  const rawRate = instants.length / ((performance.now() - started) / 1000);
  return [
    {
      workload: '/v1/orderbook backtest: 2,000 successive lookups stepping 1 s, largest asset, 1 client, auth included',
      service: `${fmt(serviceRate)} lookups/s`,
      engine: `${fmt(rawRate)} queries/s (reconstruction query, same instants)`,
      ratio: `${(serviceRate / rawRate).toFixed(1)}× (target ≥ 5×)`,
    },
  ];
}

/** The cache filled far past its capacity, on the raw engine in this process: what it counts, and what the heap grew by. */
export async function benchBookCacheMemory(ctx: BenchContext): Promise<BenchRow[]> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  await runMigrations(ctx.engine);
  const capacityMb = 32;
  const asset = ctx.dataset.largest;
  // The code of a miss compiled and its first-use structures made before measuring: the row is what
  // the cache holds, not what running it for the first time costs once.
  const warm = cachingBookReader(ctx.engine, 2 ** 20);
  for (let i = 0; i < 50; i++) await warm.at(asset.asset_id, asset.start + 3_600_000 + i * 7_200_000);
  gc();
  gc();
  const heap = () => process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
  const before = heap();
  const reader = cachingBookReader(ctx.engine, capacityMb * 2 ** 20);
  // Two hours apart: a new segment (about 200 ticks) almost every lookup, until well past capacity.
  for (let at = asset.start + 3_600_000; reader.cache.stats().evicted < 2000 && at < asset.end; at += 7_200_000) await reader.at(asset.asset_id, at);
  gc();
  gc();
  const grown = heap() - before;
  const stats = reader.cache.stats();
  return [
    {
      workload: `book segment cache, BOOK_CACHE_MB=${capacityMb}, filled past capacity (${fmt(stats.evicted)} segments evicted)`,
      service: `counts ${fmt(stats.bytes / 2 ** 20, 1)} MiB in ${fmt(stats.segments)} segments; heap +${fmt(grown / 2 ** 20, 1)} MiB after GC`,
      engine: '',
      ratio: `${((grown / 2 ** 20 / capacityMb) * 100).toFixed(0)}% of BOOK_CACHE_MB measured (target ≤ 100%)`,
    },
  ];
}
