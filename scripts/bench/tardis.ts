import { spawn } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, request } from 'node:http';
import type { AddressInfo } from 'node:net';
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
 *   And the client's own ceiling (issue 39): the same replay of the same bytes served as static
 *   files, recorded from the service once and answered from memory (target: the service ≥ 0.5× it).
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
  const day = new Date(lo).toISOString().slice(0, 10);
  // Best of two against the service, as the engine's read and the ceiling (a warm client) are: the
  // first replay after the service starts also pays its cold caches and compiles.
  const r = await bestReplay(2, () => tardisReplay(ctx.service.url, ctx.service.apiKey, ids, day));
  // The ceiling: the same client reading the same responses as static bytes. One replay through a
  // recording proxy keeps every response (status, headers, body as sent); the next ones are answered
  // from those alone, without the service.
  const files = await staticCopy(ctx.service.url);
  await tardisReplay(files.url, ctx.service.apiKey, ids, day);
  files.serveRecorded();
  const ceiling = await bestReplay(2, () => tardisReplay(files.url, ctx.service.apiKey, ids, day));
  await files.close();
  if (ceiling.messages !== r.messages) throw new Error(`static replay yielded ${ceiling.messages} messages, the service ${r.messages}`);
  const engineRate = (engine.lines * 1000) / engine.ms;
  return [
    {
      workload: `tardis_dev.replay (Python), a day of all ${ids.length} assets: ${fmt(r.messages)} messages (engine: the day's ticks as JSON lines)`,
      service: `${fmt(r.messages_per_s)} messages/s (${r.seconds.toFixed(1)} s, best of 2)`,
      engine: `${fmt(engineRate)} rows/s`,
      ratio: (r.messages_per_s / engineRate).toFixed(2),
    },
    {
      workload: `tardis_dev.replay of the same day vs the same responses served as static files (${fmt(files.bytes / MB)} MB; the client's own ceiling)`,
      service: `${fmt(r.messages_per_s)} messages/s`,
      engine: `${fmt(ceiling.messages_per_s)} messages/s (${ceiling.seconds.toFixed(1)} s, best of 2)`,
      ratio: `${(r.messages_per_s / ceiling.messages_per_s).toFixed(2)} (issue 39 target ≥ 0.5)`,
    },
  ];
}

/** The fastest of `n` replays. */
function bestReplay(n: number, run: () => Promise<ReplayRun>): Promise<ReplayRun> {
  return best(n, async () => {
    const r = await run();
    return { ...r, ms: r.seconds * 1000 };
  });
}

interface ReplayRun {
  messages: number;
  seconds: number;
  messages_per_s: number;
}

/** clients/python/bench/bench_tardis.py against `url` (fresh cache each run): what tardis_dev.replay yielded, and how fast. */
async function tardisReplay(url: string, apiKey: string, ids: string[], day: string): Promise<ReplayRun> {
  const script = fileURLToPath(new URL('../../clients/python/bench/bench_tardis.py', import.meta.url));
  const args = [script, '--url', url, '--key', apiKey, '--assets', ids.join(','), '--day', day];
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.env.BENCH_PYTHON ?? 'python3', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`bench_tardis.py exited with ${code} (pip install tardis-dev?)`))));
  });
  return JSON.parse(out.trim().split('\n').at(-1)!) as ReplayRun;
}

/**
 * A server in this process that first passes every request on to `target` and keeps each response
 * whole, by URL; after serveRecorded() it answers from what it kept, as a static file server would
 * (a URL it never saw is a 404).
 */
async function staticCopy(target: string) {
  const kept = new Map<string, { status: number; headers: IncomingHttpHeaders; body: Buffer }>();
  let recording = true;
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (!recording) {
      const file = kept.get(url);
      if (!file) return res.writeHead(404).end();
      res.writeHead(file.status, file.headers).end(file.body);
      return;
    }
    const headers = { ...req.headers, host: upstream.host };
    const forward = request({ host: upstream.hostname, port: upstream.port, path: url, method: req.method, headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (c: Buffer) => chunks.push(c));
      answer.on('end', () => {
        const body = Buffer.concat(chunks);
        const { connection: _c, 'transfer-encoding': _t, 'keep-alive': _k, ...passed } = answer.headers;
        const file = { status: answer.statusCode ?? 502, headers: { ...passed, 'content-length': String(body.length) }, body };
        kept.set(url, file);
        res.writeHead(file.status, file.headers).end(body);
      });
    });
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get bytes() {
      let n = 0;
      for (const f of kept.values()) n += f.body.length;
      return n;
    },
    serveRecorded: () => {
      recording = false;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
