import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Engine } from '../src/clickhouse/engine.js';
import { replayFile } from '../src/ingest/frame-files.js';
import { type Recorder, startRecorder } from '../src/ingest/recorder/recorder.js';
import { metrics } from '../src/metrics.js';
import { generateFrames } from './support/book-frames.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { type GammaServer, startGammaServer } from './support/gamma-server.js';
import { type PolymarketWsServer, startPolymarketWsServer } from './support/polymarket-ws-server.js';
import { recorderOptions, storedRows, truncateIngestTables, waitFor, withoutReceiveTimes } from './support/recorder-harness.js';

let te: TestEngine;
let engine: Engine;
let gamma: GammaServer;
let ws: PolymarketWsServer;
let recorder: Recorder | null;
let dir: string;

beforeAll(async () => {
  te = await createTestEngine();
  engine = te.engine;
  gamma = await startGammaServer([]);
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-faults-'));
});

afterAll(async () => {
  await gamma?.close();
  await te?.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  await truncateIngestTables(engine);
  recorder = null;
});

afterEach(async () => {
  await recorder?.stop();
  await ws?.close();
});

/** A generated stream whose initial dump becomes the server's books; the rest are the frames to publish. */
function stream(seed: number, frames: number) {
  const s = generateFrames(seed, frames);
  const [dump, ...rest] = s.lines;
  return { assets: [...s.assets, s.tradeOnlyAsset], books: JSON.parse(dump) as Record<string, unknown>[], frames: rest.filter((l) => l !== 'PONG') };
}

/** What replay stores from exactly the frames the server sent: the rows the recorder owes. */
async function replayOfSent(sent: string[]) {
  const file = join(dir, `sent-${Date.now()}.jsonl`);
  writeFileSync(file, `${sent.join('\n')}\n`);
  await truncateIngestTables(engine);
  await replayFile(engine, file);
  return storedRows(engine);
}

describe('the server drops the connection mid-stream', () => {
  it('reconnects, resubscribes, re-syncs from the new dump, and stores each delivered frame once', async () => {
    ws = await startPolymarketWsServer();
    const s = stream(11, 1200);
    s.books.forEach((b) => ws.setBook(b));
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: s.assets, batchRows: 300 }));
    await waitFor(() => ws.open()[0]?.assets.size === s.assets.length, 'the first subscription');

    const half = s.frames.length / 2;
    s.frames.slice(0, half).forEach((f) => ws.publish(f));
    // Every frame sent so far (dump included) reached the recorder before the drop.
    await waitFor(() => recorder!.status().frames === ws.sent.length, 'the first half');
    ws.dropAll();
    // Published while the recorder is away: the feed never delivers these.
    expect(ws.publish(s.frames[half])).toBe(0);
    await waitFor(() => ws.connections.length === 2 && ws.open()[0]?.assets.size === s.assets.length, 'the resubscription');
    s.frames.slice(half + 1).forEach((f) => ws.publish(f));
    await waitFor(() => recorder!.status().frames === ws.sent.length, 'the second half');
    await recorder.stop();

    expect(ws.connections).toHaveLength(2);
    expect(ws.connections[0].closedBy).toBe('server-drop');
    expect(JSON.parse(ws.connections[1].received[0])).toEqual({ assets_ids: s.assets, type: 'market', custom_feature_enabled: true, initial_dump: true });
    expect(recorder.status().reconnects).toBe(1);
    // The dump was sent on both connections: the books were re-synced after the gap.
    const dumps = ws.sent.filter((f) => f.startsWith('['));
    expect(dumps).toHaveLength(2);

    const recorded = await storedRows(engine);
    // The recorder stamped receive times; the sent frames replayed from a file carry none (local_t = t).
    expect(withoutReceiveTimes(await replayOfSent(ws.sent))).toEqual(withoutReceiveTimes(recorded));
  });
});

describe('keep-alive', () => {
  it('pings often enough that a server closing silent sockets never closes ours', async () => {
    // A socket silent for 1 s is closed; ours ping every 50 ms, a margin a loaded machine does not eat.
    ws = await startPolymarketWsServer({ pingTimeoutMs: 1000 });
    // The server does close a socket that never pings: the check below can fail.
    const silent = new WebSocket(ws.url);
    await new Promise((r) => silent.once('open', r));
    silent.send(JSON.stringify({ assets_ids: ['1'], type: 'market' }));
    const silentClosed = new Promise((r) => silent.once('close', r));

    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: ['1001', '1002', '2001'], assetsPerSocket: 1 }));
    await silentClosed;
    // 25 PINGs are at least 24 intervals of 50 ms after the first: each of ours outlived a whole
    // silence timeout. A socket the server closed ends the wait at once.
    const ours = () => ws.connections.filter((c) => c.id !== 1);
    await waitFor(() => ours().length === 3 && ours().every((c) => c.pings >= 25 || c.closedBy !== null), 'every socket to outlive the silence timeout');

    expect(ws.connections[0].closedBy).toBe('server-silence');
    expect(ours()).toHaveLength(3);
    for (const c of ours()) {
      expect(c.closedBy).toBeNull();
      expect(c.pings).toBeGreaterThanOrEqual(25);
    }
    expect(recorder.status()).toMatchObject({ reconnects: 0, connected: 3, sockets: 3 });
    // PONG answers are keep-alive, not frames.
    expect(recorder.status().pongs).toBeGreaterThan(0);
    expect(recorder.status().frames).toBe(0);
  });

  it('replaces a socket on which the server went silent', async () => {
    ws = await startPolymarketWsServer();
    // Silent for 1 s while PONGs come every 50 ms: only the muted socket can look dead, even on a loaded machine.
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: ['1001'], staleAfterMs: 1000 }));
    await waitFor(() => ws.open().length === 1, 'the connection');
    ws.mute(1);
    await waitFor(() => ws.connections[0].closedBy === 'client' && ws.connections[1]?.assets.size === 1, 'a replacement socket');
    expect(JSON.parse(ws.connections[1].received[0]).assets_ids).toEqual(['1001']);
    expect(recorder.status().reconnects).toBe(1);
  });
});

describe('malformed frames', () => {
  it('are skipped and counted, and the frames around them are stored', async () => {
    ws = await startPolymarketWsServer();
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: ['1001'] }));
    await waitFor(() => ws.open()[0]?.assets.size === 1, 'the subscription');
    const before = metrics.render();
    const good = (t: number, price: string) => ({
      market: '0xm',
      price_changes: [{ asset_id: '1001', price, size: '10', side: 'BUY' }],
      timestamp: String(t),
      event_type: 'price_change',
    });
    ws.publish(good(1_766_000_000_000, '0.4'));
    ws.publish('{"event_type":"price_change","asset_id":"1001","market":"0xm"');
    ws.publish({ event_type: 'price_change', asset_id: '1001', timestamp: '1766000000001', price: 'abc', side: 'BUY', size: '1' });
    ws.publish({ event_type: 'book', asset_id: '1001', timestamp: '1766000000002' });
    ws.publish('42');
    ws.publish({ event_type: 'brand_new_kind', asset_id: '1001', timestamp: '1766000000003' });
    ws.publish(good(1_766_000_000_004, '0.45'));
    await waitFor(() => recorder!.status().frames === 7, 'every frame');
    await recorder.stop();

    expect(recorder.status()).toMatchObject({ malformed: 4, unknown: 1 });
    const { ticks } = await storedRows(engine);
    expect(ticks.map((t) => [Number(t.t), t.price, t.best_bid])).toEqual([
      [1_766_000_000_000, 0.4, 0.4],
      [1_766_000_000_004, 0.45, 0.45],
    ]);
    const count = (text: string) => Number(/^tickhouse_recorder_malformed_frames_total (\d+)$/m.exec(text)?.[1] ?? 0);
    expect(count(metrics.render()) - count(before)).toBe(4);
  });
});

describe('sharding', () => {
  it("spreads assets over sockets of at most the configured size and stores every socket's frames", async () => {
    ws = await startPolymarketWsServer();
    const s = stream(5, 600);
    s.books.forEach((b) => ws.setBook(b));
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: s.assets, assetsPerSocket: 2 }));
    await waitFor(() => ws.open().reduce((n, c) => n + c.assets.size, 0) === s.assets.length, 'every subscription');
    expect(ws.open().map((c) => [...c.assets])).toEqual([s.assets.slice(0, 2), s.assets.slice(2, 4), s.assets.slice(4)]);
    s.frames.forEach((f) => ws.publish(f));
    await waitFor(() => recorder!.status().frames === ws.sent.length, 'every frame');
    await recorder.stop();
    expect(recorder.status()).toMatchObject({ sockets: 3, assets: 5, reconnects: 0 });
    const recorded = await storedRows(engine);
    expect(new Set(recorded.ticks.map((t) => t.asset_id))).toEqual(new Set(s.assets));
    // Frames of different sockets may interleave differently than sent; per asset the order holds.
    // The recorder stamped receive times; the sent frames replayed from a file carry none (local_t = t).
    expect(withoutReceiveTimes(await replayOfSent(ws.sent))).toEqual(withoutReceiveTimes(recorded));
  });
});
