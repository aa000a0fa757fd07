import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureKalshiHour, type KalshiHour, kalshiHour } from '../scripts/bench/kalshi-hour.js';
import { createTestEngine } from './support/engine.js';

/**
 * docs/KALSHI.md "pmxt-kalshi import" (docs/INGEST.md §6.5): `npm run import -- pmxt-kalshi` killed with
 * SIGKILL a quarter through an hour and run again leaves every table exactly as one clean import (row
 * multisets compared by hash), and a second import reads nothing. The hour is the bench's generator
 * (scripts/bench/kalshi-hour.ts) at a small size; each import and each hashing runs in a child process on
 * its own data directory, as test/import-resume.test.ts does for the Polymarket hours.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
let dir: string;
let hour: KalshiHour;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-kalshi-resume-'));
  hour = kalshiHour(dir, { rows: 800_000, tickers: 4_000 });
  const te = await createTestEngine();
  try {
    await ensureKalshiHour(te.engine, hour);
  } finally {
    await te.close();
  }
}, 120_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function importer(dataDir: string): { child: ChildProcess; stdout: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/import.ts', 'pmxt-kalshi', hour.path, '--progress', '0.05'], {
    cwd: ROOT,
    env: { ...process.env, CLICKHOUSE_URL: '', DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => out, exited };
}

function hashes(dataDir: string): Record<string, string> {
  return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', 'test/support/table-hashes.ts', dataDir], { cwd: ROOT, encoding: 'utf8' }));
}

describe('import pmxt-kalshi after kill -9', () => {
  it('a rerun after SIGKILL mid-hour, and a second import, equal one clean import', async () => {
    const clean = join(dir, 'clean');
    const first = importer(clean);
    expect(await first.exited, first.stdout()).toBe(0);
    const cleanHashes = hashes(clean);
    // Every row is a tick (a book or a change).
    expect(Number(cleanHashes.ticks.split(':')[0])).toBe(hour.rows);

    const killed = join(dir, 'killed');
    const run = importer(killed);
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        const read = [...run.stdout().matchAll(/: \S* ?\d+% (\d+)\/(\d+) rows/g)].at(-1);
        if (read && Number(read[1]) * 4 >= Number(read[2])) {
          run.child.kill('SIGKILL');
          resolve();
        }
      };
      run.child.stdout!.on('data', check);
      run.exited.then((code) => reject(new Error(`exited with ${code} before the kill:\n${run.stdout()}`)));
    });
    await run.exited;
    const partial = hashes(killed);
    expect(partial.ticks).not.toBe(cleanHashes.ticks);
    const rerun = importer(killed);
    expect(await rerun.exited, rerun.stdout()).toBe(0);
    expect(hashes(killed)).toEqual(cleanHashes);

    const again = importer(clean);
    expect(await again.exited, again.stdout()).toBe(0);
    expect(again.stdout()).toMatch(/1 already imported: nothing read/);
    expect(hashes(clean)).toEqual(cleanHashes);
  }, 600_000);
});
