import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import WebSocket from 'ws';
import type { Engine, QueryOptions } from '../src/clickhouse/engine.js';
import { type ReplayService, startReplayService } from './support/replay-service.js';
import { waitFor } from './support/wait.js';

/**
 * The replay's flow (docs/TIME-MACHINE.md §1.3): pacing by `speed`, back-pressure (a client that stops
 * reading pauses the store read and the server's buffer stays bounded), a disconnect cancels the
 * read, and read windows cut inside one millisecond still give every event once, in order.
 */
const T0 = Date.UTC(2026, 2, 1);
/** Big asset: 300k price_changes in runs of 4 equal ms, and one millisecond (T0 + BURST_MS) holding 100k of them (more than one read window holds). */
const BIG = '8001';
/** 10k price_changes, all in that same millisecond, interleaved (by seq) with BIG's. */
const SIDE = '8002';
const BURST_MS = 25_000;
const BIG_ROWS = 300_000;
/** Paced asset: 60 events over 12 s of data. */
const PACED = '8101';

/** Window reads of one replay (its SQL reads book_snapshots with `asset_id IN`): started, still open, and when each settled (performance.now()). */
interface Reads {
  started: number;
  open: number;
  settledAt: number[];
}
/** By the replay's assets (the read's `ids`, in subscription order). */
const readsByAssets = new Map<string, Reads>();
function readsOf(assets: string[]): Reads {
  const key = assets.join(',');
  let r = readsByAssets.get(key);
  if (!r) readsByAssets.set(key, (r = { started: 0, open: 0, settledAt: [] }));
  return r;
}
function watchReads(engine: Engine): Engine {
  return new Proxy(engine, {
    get(target, prop, receiver) {
      if (prop !== 'bytes') return Reflect.get(target, prop, receiver);
      return (sql: string, format: string, options: QueryOptions) => {
        const result = target.bytes(sql, format, options);
        if (sql.includes('FROM book_snapshots WHERE asset_id IN')) {
          const reads = readsOf(options.params!.ids as string[]);
          reads.started++;
          reads.open++;
          // Attached before the replay's own await of `result`: it runs first when the read settles.
          const settled = () => {
            reads.open--;
            reads.settledAt.push(performance.now());
          };
          result.then(settled, settled);
        }
        return result;
      };
    },
  });
}

/** The session's high-water mark (src/replay/session.ts, docs/TIME-MACHINE.md §1.3): at or above it, it waits for the client. */
const HIGH_WATER = 1 << 20;
/**
 * How late a paced event may arrive here: generous, for a 2-core machine under load. It only catches
 * a replay that ignores `speed` grossly; lateness is measured precisely by the bench
 * (scripts/bench/replay.ts: p50/p99/max at speed=1 and speed=10).
 */
const LATE_MS = 2_000;

let svc: ReplayService;

beforeAll(async () => {
  svc = await startReplayService(Date.UTC(2027, 0, 1), { engine: watchReads });
  const e = svc.te.engine;
  // seq: BIG's row i gets 2i; SIDE's row j sits between BIG's rows of the burst (odd seq).
  await e.command(`
    INSERT INTO ticks (asset_id, t, seq, event, side, best_bid, best_ask, price, size, book_side, market)
    SELECT '${BIG}', fromUnixTimestamp64Milli(toInt64(${T0} + multiIf(number < 100000, intDiv(number, 4), number < 200000, ${BURST_MS}, ${BURST_MS} +
      1 + intDiv(number - 200000, 4))), 'UTC'),
           number * 2, 'price_change', 'YES', 0.4, 0.6, (number % 99 + 1) / 100, number, if(number % 2 = 0, 'BUY', 'SELL'), '0xbig'
    FROM numbers(${BIG_ROWS})`);
  await e.command(`
    INSERT INTO ticks (asset_id, t, seq, event, side, best_bid, best_ask, price, size, book_side, market)
    SELECT '${SIDE}', fromUnixTimestamp64Milli(toInt64(${T0 + BURST_MS}), 'UTC'), (100000 + number * 4) * 2 + 1, 'price_change', 'NO', 0.3, 0.7,
           0.5, 1000000 + number, 'SELL', '0xside'
    FROM numbers(10000)`);
  await e.command(`
    INSERT INTO ticks (asset_id, t, seq, event, side, best_bid, best_ask, price, size, book_side, market)
    SELECT '${PACED}', fromUnixTimestamp64Milli(toInt64(${T0} + number * 200), 'UTC'), number, 'price_change', 'YES', 0.4, 0.6, 0.5, number + 1,
      'BUY', '0xpaced'
    FROM numbers(60)`);
}, 120_000);

afterAll(() => svc?.close());

function open(query: Record<string, string | number>, assets: string[]): Promise<WebSocket> {
  const ws = new WebSocket(svc.replayUrl({ ...query, key: svc.key }));
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.send(JSON.stringify({ assets_ids: assets, type: 'market' }));
      resolve(ws);
    });
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
}

/**
 * Bytes the JS heap and its buffers hold alive, after a full collection. The process's RSS is no
 * measure here: it holds garbage not yet collected and, on both test backends, the engine's own
 * memory (chDB runs in this process), which made a 60 MB RSS bound fail on a loaded CI machine.
 */
function liveBytes(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

const closeOf = (ws: WebSocket) => new Promise<[number, string]>((resolve) => ws.on('close', (code, reason) => resolve([code, reason.toString()])));

describe('pacing', () => {
  it('speed=10: every event in order, none sent before start + (t − from) / 10; the close not before `to`', async () => {
    const from = T0 - 1;
    const to = T0 + 12_000;
    const speed = 10;
    const reads = readsOf([PACED]);
    const readsBefore = reads.settledAt.length;
    const ws = await open({ from, to, speed }, [PACED]);
    const arrivals: [t: number, at: number][] = [];
    ws.on('message', (d) => {
      const at = performance.now();
      const msg = JSON.parse(d.toString());
      if (!Array.isArray(msg)) arrivals.push([Number(msg.timestamp), at]);
    });
    const close = await closeOf(ws);
    const closedAt = performance.now();
    expect(close).toEqual([1000, 'replay complete']);
    expect(arrivals.map(([t]) => t)).toEqual(Array.from({ length: 60 }, (_, i) => T0 + i * 200));
    // The server starts its clock once its first window read is back (src/replay/session.ts,
    // applySubscriptions), and the service runs in this process: on this same clock, no event can
    // arrive before that read settled + (t − from) / speed, however loaded the machine. A replay
    // that sent early, or ignored `speed`, breaks this.
    expect(reads.settledAt.length).toBeGreaterThan(readsBefore);
    const clockFloor = reads.settledAt[readsBefore];
    const due = (t: number) => clockFloor + (t - from) / speed;
    expect(arrivals.filter(([t, at]) => at < due(t)).map(([t, at]) => ({ t, early_ms: due(t) - at }))).toEqual([]);
    // The close waits for a timer without checking the clock again: Node's timers count whole
    // milliseconds, so it may come up to 1 ms before its instant.
    expect(closedAt).toBeGreaterThanOrEqual(due(to) - 1);
    // Late only within a bound a loaded machine meets.
    expect(Math.max(closedAt - due(to), ...arrivals.map(([t, at]) => at - due(t)))).toBeLessThan(LATE_MS);
  }, 30_000);
});

describe('back-pressure, windows and disconnects', () => {
  it('a client that stops reading pauses the store read and the server holds a bounded buffer; resumed, it gets every event once, in order', async () => {
    const liveBefore = liveBytes();
    const sentBefore = await eventsSent();
    const reads = readsOf([BIG, SIDE]);
    const ws = await open({ from: T0 - 1, to: T0 + 10 * 86_400_000, speed: 'max' }, [BIG, SIDE]);
    // A failure here must not leave a paused session behind for the next test to find.
    onTestFailed(() => ws.terminate());
    const sizes: number[] = [];
    let messages = 0;
    ws.on('message', (d) => {
      if (messages++ === 0) return;
      for (const item of JSON.parse(d.toString()).price_changes) sizes.push(Number(item.size));
      if (messages === 100) ws.pause();
    });
    const closed = closeOf(ws);
    await waitFor(() => messages >= 100, 'the first messages');
    // The buffers between the two fill until the server holds its high-water mark unsent: then it
    // waits for the client, with no window read open. Far from all of it is sent, at any time: what
    // the socket buffers hold (each event ~200 bytes on the wire).
    const sentSoFar = async () => (await eventsSent()) - sentBefore;
    await waitFor(async () => {
      expect(await sentSoFar()).toBeLessThan(BIG_ROWS / 3);
      return (await metric('tickhouse_replay_unsent_bytes')) >= HIGH_WATER && reads.open === 0;
    }, 'the server to wait for the client');
    const stalled = { reads: reads.started, sent: await sentSoFar() };
    expect(stalled.sent).toBeLessThan(BIG_ROWS / 3);
    // While it waits, the server serves another client a whole replay (60 events), and this one
    // stands still: no event sent, no window read.
    const other = await open({ from: T0 - 1, to: T0 + 12_000, speed: 'max' }, [PACED]);
    expect(await closeOf(other)).toEqual([1000, 'replay complete']);
    expect(reads.started).toBe(stalled.reads);
    expect(await sentSoFar()).toBe(stalled.sent + 60);
    // Bounded: at most two read windows of PAGE_CAP rows (the one being sent and the one read ahead)
    // and the socket's buffer, measured ~30 MB; the whole replay held would be several times this.
    expect(liveBytes() - liveBefore).toBeLessThan(60e6);
    ws.resume();
    expect(await closed).toEqual([1000, 'replay complete']);
    // Every event once, in (t, seq) order: BIG's rows by size, SIDE's inside the burst after BIG's row 100000 + 4j.
    const expected: number[] = [];
    for (let i = 0; i < BIG_ROWS; i++) {
      expected.push(i);
      if (i >= 100000 && i < 140000 && (i - 100000) % 4 === 0) expected.push(1_000_000 + (i - 100000) / 4);
    }
    expect(sizes.length).toBe(expected.length);
    expect(sizes).toEqual(expected);
    // The 100k-row millisecond needed more than one capped window.
    expect(reads.started).toBeGreaterThan(4);
  }, 120_000);

  it('a disconnect ends the session and its store read, mid-stream or while paused: nothing is read after it', async () => {
    const reads = readsOf([BIG]);
    for (const pauseFirst of [false, true]) {
      const ws = await open({ from: T0 - 1, to: T0 + 10 * 86_400_000, speed: 'max' }, [BIG]);
      let messages = 0;
      ws.on('message', () => {
        if (++messages === 2000 && pauseFirst) ws.pause();
      });
      await waitFor(() => messages >= 2000, 'the replay to be under way');
      if (pauseFirst) await waitFor(async () => (await metric('tickhouse_replay_unsent_bytes')) >= HIGH_WATER, 'the server to wait for the paused client');
      const startedBefore = reads.started;
      expect(startedBefore).toBeGreaterThan(0);
      ws.terminate();
      // The session leaves the server's list once its loop has ended and stopped its read; the read
      // it had asked for settles (cancelled, or finished where the engine cannot interrupt it).
      await waitFor(async () => (await metric('tickhouse_replay_open')) === 0, 'the session to end');
      await waitFor(() => reads.open === 0, 'the window read to settle');
      // Nothing more was read after the disconnect (at most the read already asked for).
      expect(reads.started - startedBefore).toBeLessThanOrEqual(1);
    }
  }, 60_000);
});

async function metric(name: string): Promise<number> {
  const text = await (await svc.app.request('/metrics')).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
}

const eventsSent = () => metric('tickhouse_replay_events_total');
