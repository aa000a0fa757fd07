import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine, QueryOptions, Settings } from '../src/clickhouse/engine.js';
import { EngineUnavailableError } from '../src/clickhouse/errors.js';
import { replayFile } from '../src/ingest/frame-files.js';
import { startRecorder } from '../src/ingest/recorder/recorder.js';
import { generateFrames } from './support/book-frames.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { type GammaServer, startGammaServer } from './support/gamma-server.js';
import { type PolymarketWsServer, startPolymarketWsServer } from './support/polymarket-ws-server.js';
import { captureLog, recorderOptions, storedRows, truncateIngestTables, waitFor, withoutReceiveTimes } from './support/recorder-harness.js';

/**
 * The embedded engine cannot be stopped from outside, so it is wrapped: while `down`, every call
 * fails as a server outage does (EngineUnavailableError). With TEST_BACKEND=http the loopback
 * ClickHouse HTTP server itself goes unavailable instead.
 */
class Outage implements Engine {
  down = false;
  readonly backend;
  readonly location;
  constructor(
    private readonly inner: Engine,
    private readonly te: TestEngine,
  ) {
    this.backend = inner.backend;
    this.location = inner.location;
  }
  set(down: boolean) {
    if (this.te.http) this.te.http.setUnavailable(down);
    else this.down = down;
  }
  private check() {
    if (this.down) throw new EngineUnavailableError('ClickHouse is unreachable (test outage)');
  }
  async rows<T>(sql: string, options?: QueryOptions) {
    this.check();
    return this.inner.rows<T>(sql, options);
  }
  async compactRows<T extends unknown[]>(sql: string, options?: QueryOptions) {
    this.check();
    return this.inner.compactRows<T>(sql, options);
  }
  async command(sql: string, options?: QueryOptions) {
    this.check();
    return this.inner.command(sql, options);
  }
  async insertJsonEachRow(table: string, body: string | Buffer, settings?: Settings) {
    this.check();
    return this.inner.insertJsonEachRow(table, body, settings);
  }
  async insertTsv(...args: Parameters<Engine['insertTsv']>) {
    this.check();
    return this.inner.insertTsv(...args);
  }
  async localFile(...args: Parameters<Engine['localFile']>) {
    this.check();
    return this.inner.localFile(...args);
  }
  stream(sql: string, format: string, options?: QueryOptions) {
    this.check();
    return this.inner.stream(sql, format, options);
  }
  async bytes(sql: string, format: string, options?: QueryOptions) {
    this.check();
    return this.inner.bytes(sql, format, options);
  }
  writeEpoch() {
    return this.inner.writeEpoch();
  }
  ping() {
    return this.down ? Promise.resolve(false) : this.inner.ping();
  }
  close() {
    return this.inner.close();
  }
}

let te: TestEngine;
let engine: Engine;
let gamma: GammaServer;
let ws: PolymarketWsServer;
let dir: string;
let log: ReturnType<typeof captureLog>;

beforeAll(async () => {
  te = await createTestEngine();
  engine = te.engine;
  gamma = await startGammaServer([]);
  ws = await startPolymarketWsServer();
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-outage-'));
  // The recorder's JSON log lines are part of what an operator sees during an outage.
  log = captureLog();
});

afterAll(async () => {
  log?.stop();
  await ws?.close();
  await gamma?.close();
  await te?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('ClickHouse unavailable for a while', () => {
  it('keeps rows in a bounded buffer, pauses reading, and writes every row once it returns', async () => {
    const outage = new Outage(engine, te);
    const s = generateFrames(3, 2500);
    const [dump, ...frames] = s.lines;
    (JSON.parse(dump) as Record<string, unknown>[]).forEach((b) => ws.setBook(b));
    const assets = [...s.assets, s.tradeOnlyAsset];
    const recorder = await startRecorder(outage, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets, batchRows: 250, maxBufferedRows: 1000 }));
    await waitFor(() => ws.open()[0]?.assets.size === assets.length, 'the subscription');

    outage.set(true);
    frames.forEach((f) => ws.publish(f));
    await waitFor(() => recorder.status().sink.full && recorder.status().sink.failures >= 3, 'a full buffer and failing inserts');
    // Reading stopped: frames wait in the socket instead of in memory, while the recorder goes on
    // retrying (three more failed inserts: time passed for it, however loaded the machine).
    const failures = recorder.status().sink.failures;
    await waitFor(() => recorder.status().sink.failures >= failures + 3, 'three more failed inserts');
    const during = recorder.status();
    // The run's first capture records may have been stored before the outage began.
    expect(during.sink.stored).toMatchObject({ ticks: 0, book_snapshots: 0, markets: 0, book_checks: 0 });
    expect(during.frames).toBeLessThan(ws.sent.filter((f) => f !== 'PONG').length);
    expect(during.sink.pending).toBeGreaterThanOrEqual(1000);
    expect(during.sink.pending).toBeLessThan(3000);
    expect(log.lines.some((l) => l.msg === 'ClickHouse unavailable: rows stay buffered, retrying' && Number(l.pending_rows) > 0)).toBe(true);
    expect(log.lines.some((l) => l.msg === 'recorder buffer full: pausing reading until ClickHouse catches up')).toBe(true);

    outage.set(false);
    const sent = ws.sent.filter((f) => f !== 'PONG');
    await waitFor(() => recorder.status().frames === sent.length && recorder.status().sink.pending === 0, 'every frame stored after the outage', 60_000);
    await recorder.stop();
    expect(log.lines.some((l) => l.msg === 'ClickHouse inserts work again: buffered rows are being written')).toBe(true);
    expect(log.lines.some((l) => l.msg === 'recorder buffer has room again: resuming reading')).toBe(true);
    expect(recorder.status().reconnects).toBe(0);

    const recorded = await storedRows(engine);
    expect(recorded.ticks.length).toBeGreaterThan(4000);
    const file = join(dir, 'sent.jsonl');
    writeFileSync(file, `${ws.sent.join('\n')}\n`);
    await truncateIngestTables(engine);
    await replayFile(engine, file);
    // The recorder stamped receive times; the sent frames replayed from a file carry none (local_t = t).
    expect(withoutReceiveTimes(await storedRows(engine))).toEqual(withoutReceiveTimes(recorded));
  });
});
