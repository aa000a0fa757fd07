import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createGzip } from 'node:zlib';
import { DATASET_END } from './dataset.js';
import type { BenchContext, BenchRow } from './types.js';

/**
 * Issue 28's workloads (docs/TARDIS.md), on the dataset's last full UTC day:
 * - `incremental_book_L2` of the largest asset through the datasets API (gzip file, bytes as sent)
 *   against the raw engine's CSV of the same day's ticks, gzipped the same way (level 1) in this
 *   process. Targets: ≥ 0.5× the engine, service RSS growth ≤ 150 MB.
 * - every asset's day through the real Python `tardis_dev.replay` (clients/python/bench/bench_tardis.py)
 *   against the raw engine reading the same ticks as JSON lines. Target: ≥ 200,000 messages/s.
 *   Needs python3 with `pip install tardis-dev` (BENCH_PYTHON names another interpreter).
 */
const DAY = 86_400_000;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const MB = 1e6;

const RAW_CSV = `
SELECT asset_id, toUnixTimestamp64Milli(t) * 1000, toUnixTimestamp64Micro(local_t), event, book_side, price, size
FROM ticks WHERE asset_id = {id:String} AND t >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC') AND t < fromUnixTimestamp64Milli({hi:Int64}, 'UTC')
ORDER BY t, seq`;

const RAW_JSON = `
SELECT toUnixTimestamp64Milli(t), seq, event, asset_id, market, price, size, book_side, best_bid, best_ask
FROM ticks WHERE asset_id IN {ids:Array(String)} AND t >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC') AND t < fromUnixTimestamp64Milli({hi:Int64}, 'UTC')
ORDER BY t, seq`;

/** Best of `n` runs (a shared machine's noise only ever adds time). */
async function best<T extends { ms: number }>(n: number, run: () => Promise<T>): Promise<T> {
  let out: T | undefined;
  for (let i = 0; i < n; i++) {
    const r = await run();
    if (!out || r.ms < out.ms) out = r;
  }
  return out!;
}

export async function benchTardisDataset(ctx: BenchContext): Promise<BenchRow[]> {
  const big = ctx.dataset.largest;
  const lo = DATASET_END - DAY;
  const params = { id: big.asset_id, lo, hi: DATASET_END };
  const [[ticks]] = await ctx.engine.compactRows<[number]>(
    `SELECT count() FROM ticks WHERE asset_id = {id:String} AND t >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC')
       AND t < fromUnixTimestamp64Milli({hi:Int64}, 'UTC') SETTINGS output_format_json_quote_64bit_integers = 0`,
    { params },
  );
  const engine = await best(3, async () => {
    const started = performance.now();
    const gzip = createGzip({ level: 1 });
    let bytes = 0;
    gzip.on('data', (c: Buffer) => (bytes += c.length));
    const done = new Promise((r) => gzip.on('end', r));
    for await (const chunk of ctx.engine.stream(RAW_CSV, 'CSV', { params })) if (!gzip.write(chunk)) await new Promise((r) => gzip.once('drain', r));
    gzip.end();
    await done;
    return { bytes, ms: performance.now() - started };
  });
  const d = new Date(lo).toISOString().slice(0, 10).split('-');
  const url = `${ctx.service.url}/v1/tardis/datasets/polymarket/incremental_book_L2/${d[0]}/${d[1]}/${d[2]}/${big.asset_id}.csv.gz`;
  const rssBefore = ctx.serviceRss();
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, ctx.serviceRss())), 20);
  const service = await best(3, async () => {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${ctx.service.apiKey}` } });
    if (res.status !== 200) throw new Error(`datasets: HTTP ${res.status}`);
    let bytes = 0;
    for await (const chunk of res.body!) bytes += chunk.length;
    return { bytes, ms: performance.now() - started };
  });
  clearInterval(sampler);
  const rate = (ms: number) => `${fmt((ticks * 1000) / ms)} ticks/s`;
  return [
    {
      workload: `tardis incremental_book_L2, a day of the largest asset (${fmt(ticks)} ticks, ${fmt(service.bytes)} B gzip; engine: CSV + gzip)`,
      service: `${rate(service.ms)} (${service.ms.toFixed(0)} ms)`,
      engine: `${rate(engine.ms)} (${engine.ms.toFixed(0)} ms)`,
      ratio: (engine.ms / service.ms).toFixed(2),
    },
    { workload: 'tardis incremental_book_L2: service RSS growth (peak)', service: `${((peak - rssBefore) / MB).toFixed(0)} MB`, engine: '', ratio: '' },
  ];
}

export async function benchTardisReplay(ctx: BenchContext): Promise<BenchRow[]> {
  const lo = DATASET_END - DAY;
  const ids = ctx.dataset.assets.map((a) => a.asset_id);
  const engine = await best(2, async () => {
    const started = performance.now();
    let lines = 0;
    for await (const chunk of ctx.engine.stream(RAW_JSON, 'JSONCompactEachRow', { params: { ids, lo, hi: DATASET_END } })) {
      for (let i = (chunk as Buffer).indexOf(10); i !== -1; i = (chunk as Buffer).indexOf(10, i + 1)) lines++;
    }
    return { lines, ms: performance.now() - started };
  });
  const script = fileURLToPath(new URL('../../clients/python/bench/bench_tardis.py', import.meta.url));
  const day = new Date(lo).toISOString().slice(0, 10);
  const args = [script, '--url', ctx.service.url, '--key', ctx.service.apiKey, '--assets', ids.join(','), '--day', day];
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.env.BENCH_PYTHON ?? 'python3', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`bench_tardis.py exited with ${code} (pip install tardis-dev?)`))));
  });
  const r = JSON.parse(out.trim().split('\n').at(-1)!) as { messages: number; seconds: number; messages_per_s: number };
  const engineRate = (engine.lines * 1000) / engine.ms;
  return [
    {
      workload: `tardis_dev.replay (Python), a day of all ${ids.length} assets: ${fmt(r.messages)} messages (engine: the day's ticks as JSON lines)`,
      service: `${fmt(r.messages_per_s)} messages/s (${r.seconds.toFixed(1)} s)`,
      engine: `${fmt(engineRate)} rows/s`,
      ratio: (r.messages_per_s / engineRate).toFixed(2),
    },
  ];
}
