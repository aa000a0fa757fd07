import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startGammaServer } from '../../test/support/gamma-server.js';
import { startPolymarketWsServer } from '../../test/support/polymarket-ws-server.js';
import { VenueFeed, venueMarkets } from '../../test/support/venue-feed.js';
import type { BenchRow } from './types.js';

/**
 * The whole venue (issue 37): a local Gamma with keyset pages listing VENUE_TOKENS tokens (60,000) and a
 * local market channel with Polymarket's limits (500 assets a connection, 100 ids a subscribe frame) in
 * this process; `npm run record -- --all`'s code in a child process on a fresh embedded engine. Once
 * every token is subscribed and its book dumped, the feed sends VENUE_RATE events/s (20,000) for
 * VENUE_SECONDS (600), one second a minute at VENUE_BURST (100,000/s); then it waits until the recorder
 * has stored every event (store = sent, per event type) and reports: the rate sent, the time the
 * recorder needed after the feed stopped, its CPU (cores, and cores per 10,000 events/s), its highest
 * RSS against the bound, and its last status line. `BENCH_ONLY=venue npm run bench` runs it alone;
 * VENUE_SECONDS=60 makes a development run.
 */
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/**
 * The recorder's resident memory bound at the default settings, the embedded engine inside it included.
 * What it holds is bounded by construction: the rows not yet stored (RECORDER_MAX_BUFFERED_ROWS, 500,000:
 * reading pauses there), one book and a few maps per token (60,000), and the engine's insert and merge
 * memory. Measured on this machine (shared): 1,356 MB at most over a 10-minute run whose buffer reached
 * ~370,000 rows, JS heap 460 MB of it.
 */
export const RSS_BOUND_MB = 2_048;

export async function benchVenue(): Promise<BenchRow[]> {
  const tokens = num('VENUE_TOKENS', 60_000);
  const rate = num('VENUE_RATE', 20_000);
  const burst = num('VENUE_BURST', 100_000);
  const seconds = num('VENUE_SECONDS', 600);
  const markets = venueMarkets(tokens / 2, 7);
  const gamma = await startGammaServer(markets.map((m) => m.gamma));
  const ws = await startPolymarketWsServer({ keepSent: false });
  const feed = new VenueFeed(ws, markets, 7);
  const t0 = Date.now();
  feed.setBooks(markets, t0);
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./venue-recorder.ts', import.meta.url)), ws.url, gamma.url], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    // No stdin (see venue-recorder.ts); the expected count goes over IPC.
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const say = (line: string) => process.stderr.write(`venue: ${line}\n`);
  let rssMax = 0;
  let heapMax = 0;
  const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssOf(child.pid!))), 1000);
  try {
    // Status and log lines are shown as they come; `next` waits for the bench's own messages.
    const messages: Record<string, unknown>[] = [];
    let wake: (() => void) | null = null;
    let ended = false;
    const reader = createInterface({ input: child.stdout! });
    reader.on('line', (line) => {
      const msg = JSON.parse(line) as Record<string, unknown>;
      if (msg.venue === 'status') {
        say(String(msg.status));
        heapMax = Math.max(heapMax, Number(msg.heapMb));
      } else if (msg.venue) messages.push(msg);
      else say(`recorder log: ${line}`);
      wake?.();
    });
    reader.on('close', () => {
      ended = true;
      wake?.();
    });
    const next = async (): Promise<Record<string, unknown>> => {
      while (messages.length === 0) {
        if (ended) throw new Error('the recorder process ended early');
        await new Promise<void>((resolve) => (wake = resolve));
      }
      return messages.shift()!;
    };
    await next();
    const subscribeStarted = performance.now();
    while (ws.open().reduce((n, c) => n + c.assets.size, 0) < tokens || (ws.counts.events.book ?? 0) < tokens) await sleep(50);
    const sockets = ws.open().length;
    say(`${tokens} tokens on ${sockets} sockets and their books dumped in ${((performance.now() - subscribeStarted) / 1000).toFixed(1)} s; feeding`);

    // The feed: rate events/s, the first second of every minute at the burst rate, paced every 10 ms.
    const cpuStart = cpuSecondsOf(child.pid!);
    const started = performance.now();
    let sent = 0;
    let peak = 0;
    let secondStart = started;
    let inSecond = 0;
    const due = (elapsed: number) => {
      const whole = Math.floor(elapsed / 60);
      const bursts = whole + Math.min(1, elapsed - 60 * whole);
      return Math.floor(rate * (elapsed - bursts) + burst * bursts);
    };
    for (;;) {
      const elapsed = Math.min(seconds, (performance.now() - started) / 1000);
      const n = due(elapsed) - sent;
      if (n > 0) {
        const t = t0 + 1 + Math.floor(elapsed * 1000);
        const out = ws.corked(() => feed.send(n, t));
        sent += out;
        inSecond += out;
      }
      if (performance.now() - secondStart >= 1000) {
        peak = Math.max(peak, inSecond / ((performance.now() - secondStart) / 1000));
        secondStart = performance.now();
        inSecond = 0;
      }
      if (elapsed >= seconds) break;
      await sleep(10);
    }
    await ws.drained();
    const feedSeconds = (performance.now() - started) / 1000;
    const cpuFed = cpuSecondsOf(child.pid!) - cpuStart;
    const expected = tokens + feed.counts.price_change + feed.counts.last_trade_price;
    say(
      `fed ${sent.toLocaleString('en-US')} events in ${feedSeconds.toFixed(1)} s (peak ${Math.round(peak).toLocaleString('en-US')}/s); waiting for the store`,
    );
    child.send({ expect: expected });
    const done = await next();
    const cpuAll = cpuSecondsOf(child.pid!) - cpuStart;
    const byEvent = Object.fromEntries((done.byEvent as { event: string; n: number }[]).map((r) => [r.event, Number(r.n)]));
    const exact =
      byEvent.book === tokens &&
      byEvent.price_change === feed.counts.price_change &&
      byEvent.last_trade_price === feed.counts.last_trade_price &&
      done.stored === expected;
    const mean = sent / feedSeconds;
    const cores = cpuAll / (feedSeconds + Number(done.lagMs) / 1000);
    const perTenK = cores / (mean / 10_000);
    const mb = Math.round(rssMax / 2 ** 20);
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    const verdict = exact ? 'yes' : `NO (${JSON.stringify(byEvent)} vs ${JSON.stringify(feed.counts)})`;
    say(done.status as string);
    return [
      {
        workload:
          `whole venue: ${tokens.toLocaleString('en-US')} tokens over ${sockets} sockets, ${rate.toLocaleString('en-US')} events/s for ${seconds} s with ` +
          `${burst.toLocaleString('en-US')}/s bursts (1 s a minute): local feed → recorder --all → embedded engine`,
        service:
          `${fmt(mean)} events/s sent (peak ${fmt(peak)}/s), ${fmt(sent)} events; stored = sent: ${verdict}, ` +
          `all stored ${(Number(done.lagMs) / 1000).toFixed(1)} s after the feed stopped`,
        engine:
          `recorder CPU ${cores.toFixed(2)} cores (${(cpuFed / feedSeconds).toFixed(2)} while fed) = ` + `${perTenK.toFixed(2)} cores per 10,000 events/s`,
        ratio: `RSS max ${mb} MB, JS heap max ${heapMax} MB (bound ${RSS_BOUND_MB} MB: ${mb <= RSS_BOUND_MB ? 'within' : 'NOT within'})`,
      },
      { workload: 'whole venue: the recorder’s last status line', service: String(done.status), engine: '', ratio: '' },
    ];
  } finally {
    clearInterval(sampler);
    if (child.exitCode === null) child.kill('SIGTERM');
    await ws.close();
    await gamma.close();
  }
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}

function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** User + system CPU of a process, seconds (/proc/<pid>/stat fields 14 and 15, in clock ticks of 1/100 s). */
function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
