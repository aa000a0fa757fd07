import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './types.js';

/**
 * Ingest of frame files (`npm run ingest -- replay`): the demo generator's frames (TICKS tick rows,
 * written to a plain file first, so generation is not timed) replayed into a fresh embedded engine in
 * a child process (one chDB directory per process), from the first line read to the last row stored.
 * With `prefixed`, every frame line carries its receive time as the recorder's archive writes it
 * (docs/INGEST.md §3). The baseline is the same engine inserting the same tick rows, already
 * serialized, in batches of the writer's size.
 */
const TICKS = 1_000_000;

interface IngestRun {
  seconds: number;
  lines: number;
  ticks: number;
  rows: number;
  rawSeconds: number;
  rawTicks: number;
}

async function run(prefixed: boolean): Promise<IngestRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./ingest-run.ts', import.meta.url)), String(TICKS), String(prefixed)], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    for await (const line of createInterface({ input: child.stdout! })) return JSON.parse(line) as IngestRun;
    throw new Error('the ingest bench process ended early');
  } finally {
    child.kill('SIGTERM');
  }
}

function row(r: IngestRun, what: string): BenchRow {
  const ticks = r.ticks / r.seconds;
  const raw = r.rawTicks / r.rawSeconds;
  return {
    workload: `ingest: ${r.lines.toLocaleString('en-US')} demo frame lines (${r.ticks.toLocaleString('en-US')} ticks, ${what}) replayed from a file`,
    service: `${Math.round(ticks).toLocaleString('en-US')} ticks/s (${Math.round(r.rows / r.seconds).toLocaleString('en-US')} rows/s all tables)`,
    engine: `${Math.round(raw).toLocaleString('en-US')} rows/s raw JSONEachRow inserts`,
    ratio: (ticks / raw).toFixed(2),
  };
}

export async function benchIngest(): Promise<BenchRow[]> {
  return [row(await run(false), 'no receive times'), row(await run(true), 'each line prefixed with its receive time')];
}
