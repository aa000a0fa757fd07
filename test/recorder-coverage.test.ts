import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { replayFile } from '../src/ingest/frame-files.js';
import { type Recorder, startRecorder } from '../src/ingest/recorder/recorder.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { type GammaServer, startGammaServer } from './support/gamma-server.js';
import { type PolymarketWsServer, startPolymarketWsServer } from './support/polymarket-ws-server.js';
import { captureLog, recorderOptions, truncateIngestTables, waitFor } from './support/recorder-harness.js';
import { json } from './support/ticks-fixture.js';

/**
 * The recorder's capture records end to end (docs/TIME-MACHINE.md §4): faults of the local market channel
 * become exactly the gaps, reconnects and day conditions /v1/coverage reports, and replaying the
 * recorder's archive into an empty store gives the same answers.
 */
let t: DataApp;
let gamma: GammaServer;
let ws: PolymarketWsServer;
let recorder: Recorder | null;
let dir: string;
let log: ReturnType<typeof captureLog> | null = null;

beforeAll(async () => {
  t = await startDataApp(Date.now());
  gamma = await startGammaServer([]);
});

afterAll(async () => {
  await gamma?.close();
  await t?.close();
});

beforeEach(async () => {
  await truncateIngestTables(t.deps.engine);
  ws = await startPolymarketWsServer();
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-coverage-'));
  recorder = null;
});

afterEach(async () => {
  log?.stop();
  log = null;
  await recorder?.stop();
  await ws.close();
  rmSync(dir, { recursive: true, force: true });
});

const book = (asset: string, t: number, bid: string) => ({
  event_type: 'book',
  market: '0xm',
  asset_id: asset,
  timestamp: String(t),
  hash: 'h',
  bids: [{ price: bid, size: '10' }],
  asks: [{ price: '0.6', size: '10' }],
});
const change = (asset: string, t: number, price: string) => ({
  event_type: 'price_change',
  market: '0xm',
  timestamp: String(t),
  price_changes: [{ asset_id: asset, price, size: '5', side: 'BUY', hash: 'h' }],
});

/** The stored capture records of an asset (or of the runs, asset ''), in order. */
async function records(asset: string): Promise<{ t: number; kind: string; socket: number }[]> {
  const rows = await t.deps.engine.rows<{ ms: number; kind: string; socket: number }>(
    `SELECT toUnixTimestamp64Milli(t) AS ms, toString(kind) AS kind, socket FROM capture_events WHERE asset_id = {a:String} ORDER BY t,` +
      ` seq SETTINGS output_format_json_quote_64bit_integers = 0`,
    { params: { a: asset } },
  );
  return rows.map((r) => ({ t: Number(r.ms), kind: r.kind, socket: Number(r.socket) }));
}

async function coverage(asset: string, start: number, end: number) {
  return (await json(await t.get(`/v1/coverage?asset_id=${asset}&start=${start}&end=${end}`))).data;
}

describe('a socket dropped for N seconds and resumed', () => {
  it('gives exactly that gap (disconnected), a resynced reconnect, not_recording after the stop, and the archive replays to the same answers', async () => {
    const A = '1001';
    ws.setBook(book(A, Date.now(), '0.4'));
    log = captureLog();
    // Each lost or refused connection logs the wait before its next attempt.
    const retries = () => log!.lines.filter((l) => l.msg === 'recorder socket closed; reconnecting');
    const before = Date.now();
    recorder = await startRecorder(t.deps.engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: [A], archiveDir: dir }));
    await waitFor(() => ws.open()[0]?.assets.size === 1 && recorder!.status().frames === 1, 'the subscription and its dump');
    ws.publish(change(A, Date.now(), '0.41'));
    await waitFor(() => recorder!.status().frames === 2, 'the change');

    // Down for N = 2 s: the server refuses every reconnection attempt meanwhile, and stays down until
    // the recorder has tried seven times, so its backoff has reached the ceiling even on a slow machine.
    const N = 2000;
    ws.setAccepting(false);
    const droppedAt = Date.now();
    ws.dropAll();
    await waitFor(() => retries().length >= 1, 'the recorder to notice the drop');
    // The close record is written just before that log line.
    const dropNoticedAt = Date.parse(String(retries()[0].time));
    await new Promise((r) => setTimeout(r, N));
    await waitFor(() => retries().length >= 7, 'seven refused reconnection attempts');
    ws.setBook(book(A, Date.now(), '0.42'));
    ws.setAccepting(true);
    const resumedAt = Date.now();
    await waitFor(() => recorder!.status().frames === 3, 'the dump after the reconnection');
    // The socket opened (and was recorded) before its dump arrived.
    const reopenNoticedAt = Date.now();
    await recorder.stop();
    const stoppedAt = Date.now();

    const [start, stop] = await records('');
    expect([start.kind, stop.kind]).toEqual(['start', 'stop']);
    const mine = await records(A);
    expect(mine.map((r) => [r.kind, r.socket])).toEqual([
      ['subscribe', 1],
      ['open', 1],
      ['resync', 1],
      ['close', 1],
      ['open', 1],
      ['resync', 1],
    ]);
    const [subscribed, opened, , closed, reopened] = mine.map((r) => r.t);
    expect(start.t).toBeGreaterThanOrEqual(before);
    expect(closed).toBeGreaterThanOrEqual(droppedAt);
    expect(closed).toBeLessThanOrEqual(dropNoticedAt);
    expect(reopened).toBeGreaterThanOrEqual(resumedAt);
    expect(reopened).toBeLessThanOrEqual(reopenNoticedAt);
    // No wait between attempts exceeded the backoff's ceiling (reconnectMaxMs 200): the first attempt
    // after the server came back was at most that far away.
    expect(Math.max(...retries().map((l) => Number(l.retry_in_ms)))).toBeLessThanOrEqual(200);
    expect(stop.t).toBeLessThanOrEqual(stoppedAt);

    t.clock.set(stoppedAt + 60_000);
    const from = before - 1000;
    const to = stoppedAt + 10_000;
    const answer = await coverage(A, from, to);
    expect(answer).toMatchObject({
      captured: [
        { from: opened, to: closed },
        { from: reopened, to: stop.t },
      ],
      gaps: [
        { from, to: start.t, reason: 'unknown' },
        ...(subscribed > start.t ? [{ from: start.t, to: subscribed, reason: 'not_subscribed' }] : []),
        ...(opened > subscribed ? [{ from: subscribed, to: opened, reason: 'disconnected' }] : []),
        { from: closed, to: reopened, reason: 'disconnected' },
        { from: stop.t, to, reason: 'not_recording' },
      ],
      reconnects: [{ t: reopened, resynced: true }],
      books: { exchange: 2, verified: 0, drifted: 1 },
    });
    expect(reopened - closed).toBeGreaterThanOrEqual(N);
    expect(answer.days.map((d: { condition: string }) => d.condition)).toEqual(answer.days.map(() => 'degraded'));

    // The archive holds the same records: replayed into an empty store, every answer is the same.
    const files = readdirSync(dir).sort();
    await truncateIngestTables(t.deps.engine);
    expect((await coverage(A, from, to)).captured).toEqual([]);
    for (const file of files) await replayFile(t.deps.engine, join(dir, file));
    expect(await coverage(A, from, to)).toEqual(answer);
    // Replaying it again adds no row anywhere.
    const counts = async () => {
      const [row] = await t.deps.engine.rows<Record<string, string | number>>(
        `SELECT (SELECT count() FROM capture_events) AS captures, (SELECT count() FROM book_checks) AS checks, (SELECT count() FROM ticks) AS ticks`,
      );
      return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)]));
    };
    const once = await counts();
    for (const file of files) await replayFile(t.deps.engine, join(dir, file));
    expect(await counts()).toEqual(once);
    // start, stop, and A's subscribe, open, resync, close, open, resync.
    expect(once).toEqual({ captures: 8, checks: 2, ticks: 3 });
  });
});

describe('an asset added by discovery later, and the stop', () => {
  it('is not_subscribed before its subscription and not_recording after the stop', async () => {
    const market = (i: number) => ({
      id: String(i),
      conditionId: `0xc${i}`,
      question: `Q${i}?`,
      slug: `q${i}`,
      outcomes: '["Yes", "No"]',
      clobTokenIds: JSON.stringify([`${i}01`, `${i}02`]),
      active: true,
      closed: false,
      enableOrderBook: true,
    });
    gamma.setMarkets([market(1)]);
    recorder = await startRecorder(
      t.deps.engine,
      recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: null, discoveryIntervalMs: 100, archiveDir: dir }),
    );
    await waitFor(() => ws.open()[0]?.assets.size === 2, 'the first subscription');
    // The scenario's own durations, not waits for something: at least 300 ms during which 201 is
    // not subscribed yet, then at least 300 ms captured before the stop.
    await new Promise((r) => setTimeout(r, 300));
    gamma.setMarkets([market(1), market(2)]);
    await waitFor(() => ws.open()[0]?.assets.size === 4, 'the subscription of the new market');
    await new Promise((r) => setTimeout(r, 300));
    await recorder.stop();
    const stoppedAt = Date.now();

    const [start, stop] = await records('');
    const [sub, open] = await records('201');
    expect([sub.kind, open.kind]).toEqual(['subscribe', 'open']);
    // Subscribed on the open socket: live at once.
    expect(open.t).toBe(sub.t);
    expect(sub.t - start.t).toBeGreaterThanOrEqual(300);
    t.clock.set(stoppedAt + 60_000);
    const answer = await coverage('201', start.t, stoppedAt + 5000);
    expect(answer).toMatchObject({
      captured: [{ from: open.t, to: stop.t }],
      gaps: [
        { from: start.t, to: open.t, reason: 'not_subscribed' },
        { from: stop.t, to: stoppedAt + 5000, reason: 'not_recording' },
      ],
      reconnects: [],
    });
    // The first market's token was captured from its socket's open to the stop.
    const first = await records('101');
    expect((await coverage('101', start.t, stop.t)).captured).toEqual([{ from: first[1].t, to: stop.t }]);

    const files = readdirSync(dir).sort();
    await truncateIngestTables(t.deps.engine);
    for (const file of files) await replayFile(t.deps.engine, join(dir, file));
    expect(await coverage('201', start.t, stoppedAt + 5000)).toEqual(answer);
  });
});
