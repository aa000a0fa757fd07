import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedEngine } from '../src/clickhouse/embedded.js';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { seedDemo } from '../src/demo/seed.js';
import { freePort } from './support/global-setup.js';
import { startService } from './support/service-process.js';

/** Work cut short by kill -9 is finished or cleaned up by the next start. */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dirs: string[] = [];
const tempDir = (name: string) => {
  const dir = mkdtempSync(join(tmpdir(), `tickhouse-${name}-`));
  dirs.push(dir);
  return dir;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const waitFor = async (condition: () => boolean, what: string, ms = 60_000) => {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

describe('a Parquet export killed with -9', () => {
  it('spools under DATA_DIR/exports; the next open of the directory removes what was left', { timeout: 60_000 }, async () => {
    const dataDir = tempDir('spool');
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/export-and-hang.ts', dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await waitFor(() => stdout.includes('spooling'), 'the export to start');
    child.kill('SIGKILL');
    await exited;
    const spool = join(dataDir, 'exports');
    const left = readdirSync(spool);
    expect(left).toHaveLength(1);
    expect(readdirSync(join(spool, left[0]))).toEqual(['result.parquet']);

    const engine = EmbeddedEngine.open(dataDir, 1);
    try {
      expect(readdirSync(spool)).toEqual([]);
      // A finished export leaves nothing behind either.
      const chunks: Buffer[] = [];
      for await (const chunk of engine.stream('SELECT number AS n FROM numbers(1000)', 'Parquet')) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).subarray(0, 4).toString()).toBe('PAR1');
      expect(readdirSync(spool)).toEqual([]);
    } finally {
      await engine.close();
    }
  });
});

describe('the first-start demo load killed with -9', () => {
  it('resumes on the next start and ends with exactly the dataset an uninterrupted load gives', { timeout: 240_000 }, async () => {
    const dataDir = tempDir('demo-resume');
    const env = { DATA_DIR: dataDir, DEMO_DATA: '1', DEMO_TICKS: '150000', LOG_LEVEL: 'info' };
    const first = startService({ ...env, PORT: String(await freePort()) });
    await first.serving();
    // Killed once the first batch of ticks is committed: a part directory of the ticks table exists.
    const ticksParts = () => {
      const uuid = /UUID '([0-9a-f-]+)'/.exec(readFileSync(join(dataDir, 'metadata', 'default', 'ticks.sql'), 'utf8'))?.[1];
      const table = uuid && join(dataDir, 'store', uuid.slice(0, 3), uuid);
      return table && existsSync(table) ? readdirSync(table).filter((f) => /^\d{6}_\d+_\d+_\d+$/.test(f)) : [];
    };
    await waitFor(() => ticksParts().length > 0, 'the first ticks batch');
    first.child.kill('SIGKILL');
    await first.exited;
    expect(first.output().stdout).not.toContain('"msg":"demo dataset loaded"');
    const { endMs, ticks, finished } = JSON.parse(readFileSync(join(dataDir, 'demo-load.json'), 'utf8'));
    expect([ticks, finished]).toEqual([150000, false]);

    const second = startService({ ...env, PORT: String(await freePort()) });
    await second.serving();
    await waitFor(() => second.output().stdout.includes('"msg":"demo dataset loaded"'), 'the resumed load', 180_000);
    expect(second.output().stdout).toContain('"msg":"resuming the interrupted demo load"');
    second.child.kill('SIGTERM');
    const code = await second.exited;
    // Seen once in CI (Node 24, full suite): ended by a signal instead of exiting 0. Say which, and what it printed last.
    const { signal, stderr, stdout } = second.output();
    expect(code, `signal ${signal}\n--- stderr:\n${stderr.slice(-4000)}\n--- stdout:\n${stdout.slice(-2000)}`).toBe(0);
    expect(JSON.parse(readFileSync(join(dataDir, 'demo-load.json'), 'utf8')).finished).toBe(true);

    // The reference: the same dataset loaded in one go (chDB opens one directory per process at a time).
    const counts = async (dir: string, load?: (engine: EmbeddedEngine) => Promise<unknown>) => {
      const engine = EmbeddedEngine.open(dir, 2);
      try {
        await load?.(engine);
        return await engine.rows(
          `SELECT (SELECT count() FROM ticks) AS ticks, (SELECT count() FROM book_snapshots) AS snapshots,
                  (SELECT count() FROM markets FINAL) AS markets, (SELECT count() FROM ohlcv_1m FINAL) AS candles,
                  (SELECT sum(cityHash64(asset_id, t, seq, price, size)) FROM ticks) AS ticks_hash`,
        );
      } finally {
        await engine.close();
      }
    };
    const expected = await counts(tempDir('demo-reference'), async (engine) => {
      await runMigrations(engine);
      await seedDemo(engine, { ticks, endMs, captureStory: true });
    });
    expect(Number((expected[0] as { ticks: string }).ticks)).toBeGreaterThan(100_000);
    expect(await counts(dataDir)).toEqual(expected);
  });
});
