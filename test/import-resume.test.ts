import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ArchiveHour, ensureArchiveHour } from '../scripts/bench/archive-hour.js';
import { receiveTimePrefix } from '../src/ingest/receive-time.js';
import { generateFrames } from './support/book-frames.js';

/**
 * docs/INGEST.md §6.5: an import killed with SIGKILL halfway and run again leaves every table exactly
 * as one clean import (row multisets compared by hash), and so does importing the same file twice.
 * Everything runs in child processes: `npm run import` as an operator runs it, and the hashing
 * script, each on its own data directory.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
let dir: string;
let file: string;
let hour: ArchiveHour;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-resume-'));
  // Big enough that the import prints progress (every 2 s) well before it ends, and that batches are sealed by then.
  const stream = generateFrames(2901, 50_000);
  const start = stream.start * 1000;
  const lines = stream.lines.map((l, i) => `${receiveTimePrefix(start + i * 1500)}${l}`);
  file = join(dir, 'capture.jsonl.gz');
  writeFileSync(file, gzipSync(`${lines.join('\n')}\n`));
  hour = await ensureArchiveHour(dir, { rows: 1_200_000, tokens: 200 });
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function importer(dataDir: string, args = ['frames', file]): { child: ChildProcess; stdout: () => string; exited: Promise<number | null> } {
  // A progress line every 50 ms: the kill below lands while batches are still being stored, however
  // fast or loaded the machine (the default 2 s can outlast the whole import).
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/import.ts', ...args, '--progress', '0.05'], {
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

describe('import after kill -9', () => {
  it('a rerun after SIGKILL, and a second import, equal one clean import', async () => {
    const clean = join(dir, 'clean');
    const first = importer(clean);
    expect(await first.exited, first.stdout()).toBe(0);
    const cleanHashes = hashes(clean);
    expect(Number(cleanHashes.ticks.split(':')[0])).toBeGreaterThan(40_000);

    const killed = join(dir, 'killed');
    const run = importer(killed);
    // Killed once it printed a progress line: some batches are stored, the rest not.
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (/files 0\/1, [1-9]\d* rows/.test(run.stdout())) {
          run.child.kill('SIGKILL');
          resolve();
        }
      };
      run.child.stdout!.on('data', check);
      run.exited.then((code) => reject(new Error(`exited with ${code} before printing progress:\n${run.stdout()}`)));
    });
    await run.exited;
    const partial = hashes(killed);
    expect(partial.ticks).not.toBe(cleanHashes.ticks);
    const rerun = importer(killed);
    expect(await rerun.exited, rerun.stdout()).toBe(0);
    expect(hashes(killed)).toEqual(cleanHashes);

    const again = importer(clean);
    expect(await again.exited, again.stdout()).toBe(0);
    expect(hashes(clean)).toEqual(cleanHashes);
  }, 600_000);

  it('pmxt through the engine: a rerun after SIGKILL mid-import, and a second import, equal one clean import', async () => {
    const args = ['pmxt', hour.pmxt];
    const clean = join(dir, 'pmxt-clean');
    const first = importer(clean, args);
    expect(await first.exited, first.stdout()).toBe(0);
    const cleanHashes = hashes(clean);
    expect(Number(cleanHashes.ticks.split(':')[0])).toBe(hour.rows - hour.events.tick_size_change);

    const killed = join(dir, 'pmxt-killed');
    const run = importer(killed, args);
    // Killed once both passes are a quarter through the file (the progress shows the rows both are done
    // with): the ticks insert has stored some of its blocks, whose views may lag behind, and the book pass
    // some of its batches.
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
    const rerun = importer(killed, args);
    expect(await rerun.exited, rerun.stdout()).toBe(0);
    expect(hashes(killed)).toEqual(cleanHashes);

    const again = importer(clean, args);
    expect(await again.exited, again.stdout()).toBe(0);
    expect(again.stdout()).toMatch(/1 already imported: nothing read/);
    expect(hashes(clean)).toEqual(cleanHashes);
  }, 600_000);
});
