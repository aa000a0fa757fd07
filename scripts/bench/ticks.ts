import { type ChildProcess, fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Engine } from '../../src/clickhouse/engine.js';
import { CSV_HEADER, exportQuery, pageQuery, type StreamQuery } from '../../src/queries/ticks.js';
import type { ClientReply, ClientRequest } from './http-client.js';
import type { BenchContext, BenchRow } from './types.js';

/**
 * Issue 5's workloads: exports and a 100k-tick page (candles and market listings: candles.ts), each
 * measured on the service over HTTP and on the raw engine running the same SQL in the same run.
 */
export interface Transfer {
  bytes: number;
  /** Lines received (rows of a CSV or JSONL body, header included). */
  lines: number;
  ttfbMs: number;
  totalMs: number;
  /** Service only: peak RSS growth over the RSS before the request. */
  rssGrowth?: number;
}

const MB = 1e6;
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

let client: ChildProcess | undefined;
let nextId = 0;
const waiting = new Map<number, (reply: ClientReply) => void>();

/** The client process (http-client.ts), forked once and reused; it exits with the bench. */
function clientProcess(): ChildProcess {
  if (client) return client;
  client = fork(fileURLToPath(new URL('./http-client.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  client.on('message', (reply: ClientReply) => {
    waiting.get(reply.id)?.(reply);
    waiting.delete(reply.id);
  });
  // Not a reason for the bench to stay alive.
  client.unref();
  client.channel?.unref();
  return client;
}

/**
 * Reads a whole HTTP response as fast as the socket allows, in the client process, while this
 * process samples the service's RSS. With `countLines: false` the client only sums bytes, as the
 * raw side does: a search per line is client CPU taken from the service on this 2-core machine
 * (an export's bytes are checked against the raw engine's instead).
 */
export async function httpTransfer(ctx: BenchContext, path: string, base = ctx.service.url, countLines = true): Promise<Transfer> {
  const child = clientProcess();
  const before = ctx.serviceRss();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, ctx.serviceRss())), 20);
  try {
    const id = nextId++;
    const reply = await new Promise<ClientReply>((resolve) => {
      waiting.set(id, resolve);
      child.send({ id, url: `${base}${path}`, apiKey: ctx.service.apiKey, countLines } satisfies ClientRequest);
    });
    if (!reply.ok) throw new Error(`${path.split('?')[0]}: ${reply.error}`);
    peak = Math.max(peak, ctx.serviceRss());
    return { bytes: reply.bytes, lines: reply.lines, ttfbMs: reply.ttfbMs, totalMs: reply.totalMs, rssGrowth: peak - before };
  } finally {
    clearInterval(sampler);
  }
}

export async function engineTransfer(engine: Engine, q: StreamQuery): Promise<Transfer> {
  const started = performance.now();
  let ttfb = 0;
  let bytes = 0;
  for await (const chunk of engine.stream(q.sql, q.format, { params: q.params })) {
    if (!ttfb) ttfb = performance.now() - started;
    bytes += (chunk as Buffer).length;
  }
  return { bytes, lines: 0, ttfbMs: ttfb, totalMs: performance.now() - started };
}

/**
 * The raw engine's bytes piped to a loopback socket by a minimal Node server in this process (no
 * framework, no auth): what the socket itself costs, for reading the export rows; the export
 * targets stay against the raw engine alone.
 */
async function loopbackTransfer(ctx: BenchContext, q: StreamQuery): Promise<Transfer> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    pipeline(ctx.engine.stream(q.sql, q.format, { params: q.params }), res, () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    return await httpTransfer(ctx, '/', `http://127.0.0.1:${(server.address() as AddressInfo).port}`, false);
  } finally {
    server.close();
  }
}

export async function timeMs(fn: () => Promise<unknown>, runs: number): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return median(times);
}

export const qs = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();

export async function benchTicks(ctx: BenchContext): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const big = ctx.dataset.largest;
  const range = { asset_id: big.asset_id, start: big.start, end: big.end };

  for (const format of ['csv', 'jsonl'] as const) {
    const path = `/v1/ticks/export?${qs({ ...range, format })}`;
    const q = exportQuery(range, format);
    // Alternate raw, service and pipe three times and keep each side's best run: the same warm caches
    // for all, and less of the shared machine's noise (two runs measured 0.74 to 0.96 for CSV).
    const raw: Transfer[] = [];
    const svc: Transfer[] = [];
    const loop: Transfer[] = [];
    for (let i = 0; i < 3; i++) {
      raw.push(await engineTransfer(ctx.engine, q));
      svc.push(await httpTransfer(ctx, path, ctx.service.url, false));
      loop.push(await loopbackTransfer(ctx, q));
    }
    // The service streams the engine's bytes as they are (after the CSV header): anything else is a failure, not a figure.
    const header = format === 'csv' ? CSV_HEADER.length : 0;
    for (const t of svc)
      if (t.bytes !== raw[0].bytes + header)
        throw new Error(`export ${format}: ${t.bytes} bytes from the service, the engine wrote ${raw[0].bytes} + ${header}`);
    for (const t of loop) if (t.bytes !== raw[0].bytes) throw new Error(`export ${format}: ${t.bytes} bytes piped, the engine wrote ${raw[0].bytes}`);
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
      workload: `export ${format.toUpperCase()}: time to first byte; service RSS growth over ${fmt(big.ticks)} rows`,
      // Both runs: the first export after start also pages in memory the engine keeps for the next
      // ones (it reads at most six months at a time: src/queries/ticks-export.ts).
      service: `${svc.map((t) => fmt(t.ttfbMs, 1)).join(' / ')} ms; +${svc.map((t) => fmt((t.rssGrowth ?? 0) / MB)).join(' MB, +')} MB`,
      engine: `${fmt(r.ttfbMs, 1)} ms`,
      ratio: `targets: TTFB ≤ 150 ms, RSS ≤ +150 MB`,
    });
    const l = loop.reduce((a, b) => (b.totalMs < a.totalMs ? b : a));
    rows.push({
      workload: `export ${format.toUpperCase()}: raw engine piped to a loopback socket by a minimal Node server`,
      service: `${fmt(rowsPerS(l))} rows/s, ${fmt(mbPerS(l), 1)} MB/s (no service involved)`,
      engine: `${fmt(rowsPerS(r))} rows/s`,
      ratio: `${(rowsPerS(l) / rowsPerS(r)).toFixed(2)} (what the socket costs; service vs this: ${(rowsPerS(s) / rowsPerS(l)).toFixed(2)})`,
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

  return rows;
}
