/**
 * `npm run mixed-load -- [--duration S] [--idle S] [--demo-ticks N] [--replay-burst N]` (issue 35)
 *
 * A bounded mixed load on loopback against the real service as `npm start` runs it (`node
 * dist/main.js`, built first; BOOK_CACHE_MB 256, a temporary DATA_DIR, accounts made before it starts,
 * restarted once the demo dataset is in, so it starts on existing data), then what an operator would
 * ask of it:
 *   1. a burst of never-reading replay WebSockets (one free key each: a free plan runs one at a time)
 *      opened at once, /healthz probed while they start;
 *   2. 16 clients for `--duration` seconds: 3 point-in-time books, 2 tick-page walks, 2 candle readers,
 *      3 exports cancelled midway (ticks and book datasets, every format), 3 replays (some read, some
 *      stall), 3 MCP agents; /healthz probed every 100 ms on a fresh connection meanwhile, from a
 *      thread of its own (the clients' work does not delay its timing);
 *   3. `--idle` seconds with nothing to do.
 * It prints the 5xx count, /healthz p50 / p99 / max (burst and load apart), the event loop's delay from
 * /metrics, and RSS at start, at its highest and after the idle time; exits 1 on a 5xx or a dead service.
 * Defaults: 600 s of load, 60 s idle, 300,000 demo ticks, a burst of 30. Timings depend on the machine:
 * run it alone (`--duration 20 --idle 10` for a quick look).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import WebSocket from 'ws';
import { openEmbeddedStore } from '../src/accounts/embedded-store.js';
import { generateApiKey, hashApiKey } from '../src/auth/keys.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const OPTIONS = ['--duration', '--idle', '--demo-ticks', '--replay-burst'];
for (let i = 0; i < args.length; i += 2) {
  if (!OPTIONS.includes(args[i]) || !/^\d+$/.test(args[i + 1] ?? '')) {
    console.error(`usage: npm run mixed-load -- [--duration S] [--idle S] [--demo-ticks N] [--replay-burst N] (bad option ${args[i]})`);
    process.exit(2);
  }
}
const option = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const DURATION_S = option('duration', 600);
const IDLE_S = option('idle', 60);
const DEMO_TICKS = option('demo-ticks', 300_000);
const BURST = option('replay-burst', 30);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)];
const between = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));
const MB = 2 ** 20;

// --- the service ---------------------------------------------------------------------------------

const dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-mixed-load-'));
const store = await openEmbeddedStore(dataDir);
const now0 = Date.now();
const unlimited = generateApiKey('th_');
await store.createAccount({ email: null, keyHash: hashApiKey(unlimited), plan: 'unlimited', plan_expires_at: now0 + 365 * 86_400_000, now: now0 });
const free: string[] = [];
for (let i = 0; i < BURST + 8; i++) {
  const key = generateApiKey('th_');
  await store.createAccount({ email: null, keyHash: hashApiKey(key), plan: 'free', plan_expires_at: null, now: now0 });
  free.push(key);
}
await store.close();

if (spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) throw new Error('npm run build failed');
// SERVICE_NODE_FLAGS: flags for the service's node only (e.g. `--cpu-prof --cpu-prof-dir=prof` to see what holds its loop).
const nodeFlags = process.env.SERVICE_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
const port = 20_000 + Math.floor(Math.random() * 20_000);
let child!: ChildProcess;
let printed = '';
let exited: string | null = null;

function startService(): void {
  printed = '';
  exited = null;
  child = spawn(process.execPath, [...nodeFlags, 'dist/main.js'], {
    cwd: ROOT,
    env: {
      ...process.env,
      CLICKHOUSE_URL: '',
      REDIS_URL: '',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dataDir,
      DEMO_DATA: '1',
      DEMO_TICKS: String(DEMO_TICKS),
      BOOK_CACHE_MB: '256',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.stdout!.on('data', (d) => (printed = (printed + d).slice(-8192)));
  child.once('exit', (code, signal) => (exited = `exit ${signal ?? code}`));
}

/** SIGTERM (the service drains and exits, writing a --cpu-prof profile), SIGKILL if it is still there 20 s later. */
async function stopService(): Promise<void> {
  if (exited !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([gone, sleep(20_000)]);
  child.kill('SIGKILL');
}

const stop = async () => {
  await stopService();
  rmSync(dataDir, { recursive: true, force: true });
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    void stop().then(() => process.exit(130));
  });
}
process.on('exit', () => child.kill('SIGKILL'));

const rss = () => {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) * 1024;
  } catch {
    return Number.NaN;
  }
};
const until = async (done: () => boolean, what: string, ms: number) => {
  for (const deadline = Date.now() + ms; !done(); await sleep(100)) {
    if (exited) throw new Error(`the service ended (${exited}) before ${what}:\n${printed}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
};
// The demo dataset loads on the first start; the measured run is a second start on that data, as a
// service usually starts (the load's own garbage would otherwise count in "RSS at start").
startService();
await until(() => printed.includes('tickhouse is serving on'), 'the service to serve', 120_000);
const loadFile = join(dataDir, 'demo-load.json');
await until(() => existsSync(loadFile) && JSON.parse(readFileSync(loadFile, 'utf8')).finished === true, 'the demo dataset to load', 600_000);
await stopService();
startService();
await until(() => printed.includes('tickhouse is serving on'), 'the service to serve again', 120_000);

// --- HTTP on loopback ----------------------------------------------------------------------------

const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const tally = { requests: 0, fiveXX: 0, refused429: 0, other4xx: 0, errors: 0 };
const fiveXXSeen: string[] = [];

interface Answer {
  status: number;
  body: Buffer;
}

/** A GET or POST read whole (or cut after `maxBytes`: an export cancelled midway). */
function call(path: string, o: { key?: string; body?: string; maxBytes?: number; fresh?: boolean } = {}): Promise<Answer> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = {};
    if (o.key) headers.authorization = `Bearer ${o.key}`;
    if (o.body) headers['content-type'] = 'application/json';
    const req = request({ host: '127.0.0.1', port, path, method: o.body ? 'POST' : 'GET', headers, agent: o.fresh ? false : agent }, (res) => {
      const chunks: Buffer[] = [];
      let got = 0;
      res.on('data', (c: Buffer) => {
        got += c.length;
        // An export cut midway keeps only its start; anything else is read whole (a page is JSON).
        if (o.maxBytes === undefined || got <= 1 << 16) chunks.push(c);
        if (o.maxBytes !== undefined && got >= o.maxBytes) {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on('error', () => {
      tally.errors++;
      resolve({ status: 0, body: Buffer.alloc(0) });
    });
    if (o.body) req.write(o.body);
    req.end();
  }).then((a) => {
    const answer = a as Answer;
    tally.requests++;
    if (answer.status >= 500) {
      tally.fiveXX++;
      if (fiveXXSeen.length < 10) fiveXXSeen.push(`${answer.status} ${path.slice(0, 120)}: ${answer.body.toString().slice(0, 200)}`);
    } else if (answer.status === 429) tally.refused429++;
    else if (answer.status >= 400) tally.other4xx++;
    return answer;
  });
}

const json = (a: Answer) => JSON.parse(a.body.toString());
const markets = json(await call('/v1/markets?limit=50')).data as { asset_id: string }[];
const assets = markets.map((m) => m.asset_id);
const stats = json(await call('/v1/markets/stats')).data as { first_timestamp: number; last_timestamp: number };
const [first, last] = [stats.first_timestamp, stats.last_timestamp];
const midnight = Date.now() - (Date.now() % 86_400_000);
const instant = () => between(first, last);

/** /healthz on a fresh connection, as a load balancer's probe: milliseconds, or Infinity without a 200. */
/**
 * /healthz every 100 ms on a fresh connection, from a thread of its own: the load's clients share this
 * process's event loop (replays read at max speed, exports, JSON pages), and a probe timed on that loop
 * counted their delays as the service's. A health checker is a process apart; so is this one's loop.
 */
const PROBER = `
const { parentPort, workerData } = require('node:worker_threads');
const { request } = require('node:http');
let phase = null;
const probe = () => new Promise((resolve) => {
  const started = performance.now();
  const req = request({ host: '127.0.0.1', port: workerData.port, path: '/healthz', agent: false }, (res) => {
    res.resume();
    res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - started : Infinity));
  });
  req.on('error', () => resolve(Infinity));
  req.end();
});
async function run(p) {
  while (!p.stopped) {
    const took = await probe();
    if (p.warmup) {
      if (--p.warmup === 0) parentPort.postMessage('warm');
    } else {
      p.ms.push(took);
      if (took > 100) p.slow.push([Math.round((performance.now() - p.t0) / 100) / 10, Math.round(took * 10) / 10]);
    }
    // How late this thread's own timer fires: the machine's run queue, not the service.
    const asleep = performance.now();
    await new Promise((r) => setTimeout(r, 100));
    if (!p.warmup) p.lateMax = Math.max(p.lateMax, performance.now() - asleep - 100);
  }
  parentPort.postMessage({ ms: p.ms, slow: p.slow, lateMax: p.lateMax });
}
parentPort.on('message', (cmd) => {
  if (cmd === 'stop') phase.stopped = true;
  else {
    phase = { ms: [], slow: [], lateMax: 0, t0: performance.now(), stopped: false, warmup: cmd === 'warm' ? 5 : 0 };
    run(phase);
  }
});
`;

interface Probed {
  ms: number[];
  /** [seconds since the probes began, ms] of each probe over 100 ms. */
  slow: [number, number][];
  /** The prober's own 100 ms timer fired at most this late (ms): a busy machine delays it as it delays the probes. */
  lateMax: number;
}

/** One prober thread for the run, warmed (its first requests load modules and open its first sockets: 100–200 ms). */
const prober = new Worker(PROBER, { eval: true, workerData: { port } });
prober.unref();

function proberSays<T>(): Promise<T> {
  return new Promise<T>((resolve) => prober.once('message', resolve));
}

class Probes {
  static async warm(): Promise<void> {
    const warm = proberSays<'warm'>();
    prober.postMessage('warm');
    await warm;
    const done = proberSays<Probed>();
    prober.postMessage('stop');
    await done;
  }

  constructor() {
    prober.postMessage('start');
  }

  async stop(): Promise<Probed> {
    const out = proberSays<Probed>();
    prober.postMessage('stop');
    return out;
  }
}

function quantiles({ ms, slow, lateMax }: Probed) {
  const s = [...ms].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
  return { probes: s.length, p50: q(0.5), p99: q(0.99), max: s.at(-1) ?? Number.NaN, over100: s.filter((x) => x > 100).length, slow, proberLateMax: lateMax };
}

async function eventLoopDelay(): Promise<Record<string, number>> {
  const text = (await call('/metrics')).body.toString();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^tickhouse_event_loop_delay_seconds\{quantile="([\d.]+)"\} ([\d.e+-]+)$/gm)) out[`q${m[1]}`] = Number(m[2]) * 1000;
  return out;
}

// --- the clients ---------------------------------------------------------------------------------

const ops: Record<string, number> = {};
const count = (kind: string) => (ops[kind] = (ops[kind] ?? 0) + 1);
let loadRunning = true;

async function books() {
  while (loadRunning) {
    await call(`/v1/orderbook?asset_id=${pick(assets)}&timestamp=${instant()}&limit=20`, { key: unlimited });
    count('book');
  }
}

async function pages() {
  while (loadRunning) {
    const start = instant();
    let cursor = '';
    for (let page = 0; page < 5 && loadRunning; page++) {
      const a = await call(`/v1/ticks?asset_id=${pick(assets)}&start=${start}&end=${last}&limit=10000${cursor}`, { key: unlimited });
      count('ticks page');
      const next = a.status === 200 ? json(a).meta.next_cursor : null;
      if (!next) break;
      cursor = `&cursor=${next}`;
    }
  }
}

async function candles() {
  while (loadRunning) {
    const resolution = pick(['1m', '5m', '1h', '1d']);
    await call(`/v1/ohlcv?asset_id=${pick(assets)}&resolution=${resolution}&start=${instant()}&limit=1000`, { key: unlimited });
    count('candles');
  }
}

/** An export read for a while, then cancelled (its engine query must go with it). */
async function exports(key: string) {
  while (loadRunning) {
    const asset = pick(assets);
    const start = key === unlimited ? instant() : midnight;
    const format = pick(['csv', 'jsonl', 'parquet']);
    const path =
      Math.random() < 0.5
        ? `/v1/ticks/export?asset_id=${asset}&start=${start}&end=${Date.now()}&format=${format}`
        : `/v1/orderbook/export?asset_id=${asset}&start=${start}&end=${Math.min(Date.now(), start + 6 * 3_600_000)}&depth=${pick([5, 25, 100])}` +
          `&interval=${pick([1, 10, 1000])}&format=${format}`;
    await call(path, { key, maxBytes: between(64 * 1024, 16 * MB) });
    count('export (cancelled midway)');
  }
}

/** A replay that reads at `max` for a while, or one that subscribes and never reads, then leaves. */
async function replays(key: string) {
  while (loadRunning) {
    const stall = Math.random() < 0.4;
    const from = key === unlimited ? instant() : midnight;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/replay/market?from=${from}&to=${Date.now()}&speed=max&key=${key}`);
    await new Promise<void>((resolve) => {
      const end = () => resolve();
      ws.once('open', () => {
        ws.send(JSON.stringify({ assets_ids: assets.slice(0, between(1, 20)), type: 'market' }));
        if (stall) ws.pause();
        setTimeout(() => ws.terminate(), between(2_000, 15_000));
      });
      ws.on('message', () => {});
      ws.once('unexpected-response', (_req, res) => {
        tally.requests++;
        if ((res.statusCode ?? 0) >= 500) tally.fiveXX++;
        else if (res.statusCode === 429) tally.refused429++;
        ws.terminate();
        setTimeout(end, 500);
      });
      ws.once('error', () => {});
      ws.once('close', end);
    });
    count(stall ? 'replay (never read)' : 'replay (read at max)');
  }
}

const TOOLS: [string, () => Record<string, unknown>][] = [
  ['get_order_book', () => ({ asset_id: pick(assets), timestamp: instant(), depth: 20 })],
  ['get_candles', () => ({ asset_id: pick(assets), resolution: '1h', limit: 200 })],
  ['search_markets', () => ({ search: pick(['will', 'bitcoin', 'election', 'a']), limit: 50 })],
  ['get_tick_summary', () => ({ asset_id: pick(assets), start: instant() - 3_600_000, end: instant() })],
];

async function agents() {
  for (let id = 1; loadRunning; id++) {
    const [name, argsOf] = pick(TOOLS);
    await call('/mcp', { key: unlimited, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: argsOf() } }) });
    count(`mcp ${name}`);
  }
}

// --- the run -------------------------------------------------------------------------------------

const mb = (bytes: number) => `${Math.round(bytes / MB)} MB`;
// Warm: one of each request before RSS at start is read.
await call(`/v1/orderbook?asset_id=${assets[0]}&limit=20`, { key: unlimited });
await call(`/v1/ticks?asset_id=${assets[0]}&start=${first}&end=${last}&limit=10`, { key: unlimited });
const rssStart = rss();
let rssMax = rssStart;
const sampler = setInterval(() => (rssMax = Math.max(rssMax, rss())), 1000);
console.log(`mixed load: service pid ${child.pid} on :${port} (${DEMO_TICKS} demo ticks), RSS ${mb(rssStart)} after start`);

// 1. The burst: never-reading replays opened at once.
await Probes.warm();
await eventLoopDelay();
const burstProbes = new Probes();
const burst = free.slice(0, BURST).map((key) => {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/replay/market?from=${midnight}&to=${Date.now()}&speed=max&key=${key}`);
  ws.once('open', () => {
    ws.send(JSON.stringify({ assets_ids: assets.slice(0, 20), type: 'market' }));
    ws.pause();
  });
  ws.on('error', () => {});
  return ws;
});
await sleep(5_000);
const burstHealthz = quantiles(await burstProbes.stop());
const burstLoop = await eventLoopDelay();
for (const ws of burst) ws.terminate();
console.log(`burst of ${BURST} never-reading replays: /healthz ${JSON.stringify(burstHealthz)}; event loop delay (ms) ${JSON.stringify(burstLoop)}`);

// 2. The load.
const loadProbes = new Probes();
const started = performance.now();
const clients = [
  books(),
  books(),
  books(),
  pages(),
  pages(),
  candles(),
  candles(),
  exports(unlimited),
  exports(free[BURST]),
  exports(free[BURST + 1]),
  replays(unlimited),
  replays(free[BURST + 2]),
  replays(free[BURST + 3]),
  agents(),
  agents(),
  agents(),
];
const progress = setInterval(() => {
  const s = Math.round((performance.now() - started) / 1000);
  console.log(`  ${s} s: ${tally.requests} requests, ${tally.fiveXX} 5xx, RSS ${mb(rss())} (max ${mb(rssMax)})`);
}, 30_000);
await sleep(DURATION_S * 1000);
loadRunning = false;
await Promise.all(clients);
clearInterval(progress);
const loadHealthz = quantiles(await loadProbes.stop());
const loadLoop = await eventLoopDelay();
const rssAfterLoad = rss();

// 3. Idle.
await sleep(IDLE_S * 1000);
clearInterval(sampler);
const rssIdle = rss();
const alive = exited === null;
const metricsText = alive ? (await call('/metrics')).body.toString() : '';
const maxDelayMs = Number(/^tickhouse_event_loop_delay_max_seconds ([\d.e+-]+)$/m.exec(metricsText)?.[1]) * 1000;

console.log(`operations: ${JSON.stringify(ops)}`);
console.log(`answers: ${JSON.stringify(tally)}`);
for (const line of fiveXXSeen) console.log(`  5xx: ${line}`);
console.log(
  `mixed load ${DURATION_S} s, 16 clients: 5xx ${tally.fiveXX}; /healthz during the load p50 ${loadHealthz.p50.toFixed(1)} ms, p99 ` +
    `${loadHealthz.p99.toFixed(1)} ms, max ${loadHealthz.max.toFixed(1)} ms (${loadHealthz.over100} of ${loadHealthz.probes} probes over 100 ms); ` +
    `during the replay burst p99 ${burstHealthz.p99.toFixed(1)} ms, max ${burstHealthz.max.toFixed(1)} ms; event loop delay p99 ` +
    `${(loadLoop['q0.99'] ?? Number.NaN).toFixed(1)} ms, max since start ${maxDelayMs.toFixed(1)} ms; RSS start ${mb(rssStart)}, max ${mb(rssMax)}, ` +
    `after the load ${mb(rssAfterLoad)}, after ${IDLE_S} s idle ${mb(rssIdle)} (BOOK_CACHE_MB 256)${alive ? '' : `; the service DIED: ${exited}`}`,
);
console.log(
  `probes over 100 ms [s into the load, ms]: ${JSON.stringify(loadHealthz.slow)}; the prober's own 100 ms timer late by at most ` +
    `${loadHealthz.proberLateMax.toFixed(1)} ms (load), ${burstHealthz.proberLateMax.toFixed(1)} ms (burst)`,
);
agent.destroy();
await stop();
process.exit(tally.fiveXX > 0 || !alive ? 1 : 0);
