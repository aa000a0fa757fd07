import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../src/clickhouse/engine.js';
import { replayFile } from '../src/ingest/frame-files.js';
import { RECEIVE_PREFIX_LENGTH, receiveTimeOf } from '../src/ingest/receive-time.js';
import { startRecorder } from '../src/ingest/recorder/recorder.js';
import { generateFrames } from './support/book-frames.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { fixturePath } from './support/fixtures.js';
import { type GammaServer, startGammaServer } from './support/gamma-server.js';
import { type PolymarketWsServer, startPolymarketWsServer } from './support/polymarket-ws-server.js';
import { recorderOptions, storedRows, tablesDigest, truncateIngestTables, waitFor, withoutReceiveTimes } from './support/recorder-harness.js';

const FRAMES_FILE = fixturePath('polymarket/ws-frames.jsonl');
const FRAMES = readFileSync(FRAMES_FILE, 'utf8').split('\n').filter(Boolean);
const GAMMA_FILE = fixturePath('polymarket/gamma-markets.json');
const GAMMA: Record<string, unknown>[] = JSON.parse(readFileSync(GAMMA_FILE, 'utf8'));
const GAMMA_TOKENS: string[] = JSON.parse(GAMMA[0].clobTokenIds as string);

let te: TestEngine;
let engine: Engine;
let ws: PolymarketWsServer;
let gamma: GammaServer;
let dir: string;

beforeAll(async () => {
  te = await createTestEngine();
  engine = te.engine;
  gamma = await startGammaServer(GAMMA);
});

afterAll(async () => {
  await gamma?.close();
  await te?.close();
});

beforeEach(async () => {
  ws = await startPolymarketWsServer();
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-archive-'));
  await truncateIngestTables(engine);
});

afterEach(async () => {
  await ws.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Every asset a line names, so an explicit subscription receives the whole capture. */
function assetsIn(lines: string[]): string[] {
  const out = new Set<string>();
  for (const line of lines) {
    for (const m of line.matchAll(/"asset_id"\s*:\s*"(\d+)"/g)) out.add(m[1]);
  }
  return [...out];
}

/** Records `lines` through the local servers with an archive; returns the archive file. */
async function record(lines: string[], assets: string[], batchRows = 20_000): Promise<string> {
  const recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets, archiveDir: dir, batchRows }));
  await waitFor(() => ws.open().length === 1 && ws.open()[0].assets.size === assets.length, 'the subscription');
  for (const line of lines) ws.publish(line);
  const frames = lines.filter((l) => l !== 'PONG').length;
  await waitFor(() => recorder.status().frames === frames, 'every frame');
  await recorder.stop();
  const files = readdirSync(dir);
  expect(files).toEqual([`polymarket-${new Date().toISOString().slice(0, 10)}.jsonl.gz`]);
  return join(dir, files[0]);
}

describe('recording the sample capture through a local market channel', () => {
  it('stores exactly the rows replay stores from the same frames, and the archive replays to them', async () => {
    const started = Date.now() * 1000;
    const archive = await record(FRAMES, [...assetsIn(FRAMES), ...GAMMA_TOKENS]);
    const stopped = Date.now() * 1000;
    const recorded = await storedRows(engine);
    const recordedDigest = await tablesDigest(engine);
    expect(recorded.ticks).toHaveLength(10);
    expect(recorded.snapshots).toHaveLength(4);
    // new_market and market_resolved name 2 tokens each, best_bid_ask and tick_size_change one.
    expect(recorded.marketEvents).toHaveLength(6);
    // Two outcome tokens from Gamma, two from the new_market event.
    expect(recorded.markets.map((m) => m.outcome)).toEqual(expect.arrayContaining(['Yes', 'No', 'Yes', 'No']));
    expect(recorded.markets).toHaveLength(4);
    // Labels from Gamma and from new_market reach the ticks' side only when the asset is named there;
    // the capture's assets are not, so every side is UNKNOWN, as replay gives.
    expect(new Set(recorded.ticks.map((t) => t.side))).toEqual(new Set(['UNKNOWN']));

    // Receive times (docs/INGEST.md §4): every row carries the µs its frame arrived at, taken while the
    // recorder ran, never before the exchange's time; rows of one frame share it.
    const rows = [...recorded.ticks, ...recorded.snapshots, ...recorded.marketEvents] as { t: number; local_t: number }[];
    for (const r of rows) {
      expect(r.local_t).toBeGreaterThanOrEqual(r.t * 1000);
      expect(r.local_t).toBeGreaterThanOrEqual(started);
      expect(r.local_t).toBeLessThanOrEqual(stopped);
    }
    const stamps = new Set(rows.map((r) => r.local_t));
    // One stamp per frame: the dump's two books share one, line 2's two items another, and so on.
    expect(stamps.size).toBe(FRAMES.length);

    // The archive holds every frame exactly as sent, one per line, prefixed with its receive time
    // (docs/INGEST.md §3), and the run's capture records among them (docs/TIME-MACHINE.md §4): the
    // books of the dump and of line 4 re-synced the socket.
    const archived = gunzipSync(readFileSync(archive)).toString('utf8').split('\n');
    expect(archived.pop()).toBe('');
    const isCapture = (line: string) => line.startsWith('{"event_type":"tickhouse_capture"');
    const framesArchived = archived.filter((l) => !isCapture(l));
    expect(framesArchived.map((l) => l.slice(RECEIVE_PREFIX_LENGTH))).toEqual(FRAMES);
    expect(new Set(framesArchived.map((l) => receiveTimeOf(l)))).toEqual(stamps);
    expect(archived.filter(isCapture).map((l) => [JSON.parse(l).kind, JSON.parse(l).assets.length])).toEqual([
      ['start', 0],
      ['subscribe', 10],
      ['open', 10],
      ['resync', 2],
      ['resync', 1],
      ['stop', 0],
    ]);

    // The sample file has no receive times: the same rows with local_t = t.
    await truncateIngestTables(engine);
    await replayFile(engine, FRAMES_FILE, { marketsFile: GAMMA_FILE });
    const fromSample = await storedRows(engine);
    expect(withoutReceiveTimes(fromSample)).toEqual(withoutReceiveTimes(recorded));
    for (const r of [...fromSample.ticks, ...fromSample.snapshots, ...fromSample.marketEvents] as { t: number; local_t: number }[]) {
      expect(r.local_t).toBe(r.t * 1000);
    }

    // The archive restores every row, receive times included: the same digest of the tables.
    await truncateIngestTables(engine);
    const summary = await replayFile(engine, archive, { marketsFile: GAMMA_FILE });
    expect(summary.normalizer.frames).toBe(FRAMES.length);
    expect(summary.normalizer.malformed).toBe(0);
    expect(await storedRows(engine)).toEqual(recorded);
    expect(await tablesDigest(engine)).toBe(recordedDigest);
    // Replaying it again changes nothing.
    await replayFile(engine, archive, { marketsFile: GAMMA_FILE });
    expect(await tablesDigest(engine)).toBe(recordedDigest);
    console.info(`recorder-replay: tables digest recorded = after the archive replay = ${recordedDigest}`);
  });

  it('stores generated frames across many batches exactly as replay does', async () => {
    const stream = generateFrames(7, 3000);
    const archive = await record(stream.lines, [...stream.assets, stream.tradeOnlyAsset], 500);
    const recorded = await storedRows(engine);
    expect(recorded.ticks.length).toBeGreaterThan(3000);
    expect(recorded.snapshots.some((s) => s.is_checkpoint === 1)).toBe(true);

    await truncateIngestTables(engine);
    await replayFile(engine, archive);
    expect(await storedRows(engine)).toEqual(recorded);
  });
});
