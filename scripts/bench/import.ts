import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './types.js';

/**
 * `npm run import` (docs/INGEST.md §6): the demo generator's frames with receive times imported as
 * `frames`, and the same rows written by the engine as Tardis CSV and imported as `tardis`, each in a
 * child process (one chDB directory per process) from the first line read to the last row stored.
 * The baseline is the same engine inserting the same tick rows, already serialized, as JSONEachRow in
 * batches of the writer's size. Target (issue 29): ≥ 300,000 events/s and ≥ 0.5× the baseline; peak
 * RSS is the importing process's, before the baseline runs.
 */
const TICKS = 1_000_000;

interface ImportRun {
  seconds: number;
  events: number;
  ticks: number;
  rows: number;
  problems: number;
  bytes: number;
  maxRssMb: number;
  rawSeconds: number;
  rawTicks: number;
}

async function run(format: 'frames' | 'tardis'): Promise<ImportRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./import-run.ts', import.meta.url)), String(TICKS), format], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    for await (const line of createInterface({ input: child.stdout! })) return JSON.parse(line) as ImportRun;
    throw new Error('the import bench process ended early');
  } finally {
    child.kill('SIGTERM');
  }
}

const n = (x: number) => Math.round(x).toLocaleString('en-US');

function row(r: ImportRun, what: string): BenchRow {
  const events = r.events / r.seconds;
  const ticks = r.ticks / r.seconds;
  const raw = r.rawTicks / r.rawSeconds;
  return {
    workload: `import ${what}: ${(r.bytes / 2 ** 20).toFixed(0)} MiB, ${n(r.events)} events (${n(r.ticks)} ticks), ` + `peak RSS ${r.maxRssMb} MB`,
    service: `${n(events)} events/s, ${n(ticks)} ticks/s (${n(r.rows / r.seconds)} rows/s all tables)`,
    engine: `${n(raw)} rows/s raw JSONEachRow inserts`,
    ratio: (ticks / raw).toFixed(2),
  };
}

export async function benchImport(): Promise<BenchRow[]> {
  return [row(await run('frames'), 'frames (receive-stamped lines)'), row(await run('tardis'), 'tardis (incremental_book_L2 + trades CSV)')];
}
