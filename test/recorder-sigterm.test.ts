import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/clickhouse/engine.js';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { ServerEngine } from '../src/clickhouse/server.js';
import { replayLines } from '../src/ingest/frame-files.js';
import { generateFrames } from './support/book-frames.js';
import { type ClickHouseHttpServer, startClickHouseHttpServer } from './support/clickhouse-http-server.js';
import { type GammaServer, startGammaServer } from './support/gamma-server.js';
import { freePort } from './support/global-setup.js';
import { type PolymarketWsServer, startPolymarketWsServer } from './support/polymarket-ws-server.js';
import { storedRows, truncateIngestTables, waitFor, withoutReceiveTimes } from './support/recorder-harness.js';

/**
 * `npm run record` as a child process against local servers: src/record.ts under tsx, as the other
 * process suites run theirs (npm runs the compiled dist/record.js). The data lives behind a ClickHouse
 * HTTP server in this process, so both processes reach it (chDB allows one process per directory).
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

let dataDir: string;
let clickhouse: ClickHouseHttpServer;
let engine: Engine;
let gamma: GammaServer;
let ws: PolymarketWsServer;
let child: ChildProcess | null = null;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-sigterm-'));
  clickhouse = await startClickHouseHttpServer({ dataDir });
  engine = new ServerEngine({ url: clickhouse.url, username: 'default', password: '', database: 'default' });
  await runMigrations(engine);
  gamma = await startGammaServer([]);
  ws = await startPolymarketWsServer({ pingTimeoutMs: 1000 });
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await ws?.close();
  await gamma?.close();
  await engine?.close();
  await clickhouse?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('npm run record', () => {
  it('on SIGTERM stops reading, stores every buffered row, and exits 0', { timeout: 120_000 }, async () => {
    const s = generateFrames(21, 800);
    const [dump, ...frames] = s.lines;
    (JSON.parse(dump) as Record<string, unknown>[]).forEach((b) => ws.setBook(b));
    const assets = [...s.assets, s.tradeOnlyAsset];
    const metricsPort = await freePort();
    // Batches only by size or a minute of age: every row is still buffered when SIGTERM comes.
    const args = [
      '--assets',
      assets.join(','),
      '--batch-rows',
      '1000000',
      '--batch-age-ms',
      '60000',
      '--status-interval',
      '1',
      '--metrics-port',
      String(metricsPort),
    ];
    child = spawn(process.execPath, ['--import', 'tsx', 'src/record.ts', ...args], {
      cwd: ROOT,
      env: {
        ...process.env,
        CLICKHOUSE_URL: clickhouse.url,
        POLYMARKET_WS_URL: ws.url,
        GAMMA_URL: gamma.url,
        RECORDER_PING_INTERVAL_MS: '200',
        LOG_LEVEL: 'info',
        DATA_DIR: join(dataDir, 'unused'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));

    // A failure shows what the child printed.
    const waitForChild = (condition: () => boolean, what: string) =>
      waitFor(condition, what, 40_000).catch((err: Error) => {
        throw new Error(`${err.message}\n--- child stdout:\n${stdout}\n--- child stderr:\n${stderr}`);
      });
    await waitForChild(() => ws.open()[0]?.assets.size === assets.length, 'the child to subscribe');
    frames.forEach((f) => ws.publish(f));
    const sent = ws.sent.filter((f) => f !== 'PONG');
    // The status line reports what the child has received.
    await waitForChild(() => new RegExp(`total ${sent.length} frames`).test(stdout), `the child to receive ${sent.length} frames`);
    expect(stdout).toMatch(/record: \d+ frames\/s, \d+ rows\/s, sockets 1\/1, tokens 5 live, 5 subscribed, 0 silent, buffer \d+ rows, last insert \d+ ms/);
    const scraped = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(scraped).toContain(`tickhouse_recorder_frames_total ${sent.length}`);
    expect(scraped).toMatch(/^tickhouse_recorder_buffered_rows [1-9]\d*$/m);
    expect(scraped).toContain('tickhouse_recorder_connected_sockets 1');
    const [before] = await engine.rows<{ n: string }>('SELECT count() AS n FROM ticks');
    expect(Number(before.n)).toBe(0);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).not.toContain('tickhouse:');
    expect(ws.connections[0].closedBy).toBe('client');
    expect(stdout).toContain('"msg":"recorder flushing buffered rows"');

    const recorded = await storedRows(engine);
    expect(recorded.ticks.length).toBeGreaterThan(1000);
    await truncateIngestTables(engine);
    await replayLines(engine, ws.sent, { sourceId: 'sigterm-expected' });
    // The recorder stamped receive times; the sent frames replayed carry none (local_t = t).
    expect(withoutReceiveTimes(await storedRows(engine))).toEqual(withoutReceiveTimes(recorded));
  });
});
