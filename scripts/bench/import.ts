import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type ArchiveHour, archiveOptionsFromEnv, ensureArchiveHour } from './archive-hour.js';
import type { ImportRun } from './import-run.js';
import { type KalshiHour, kalshiHour, kalshiOptionsFromEnv } from './kalshi-hour.js';
import type { BenchRow } from './types.js';

/**
 * `npm run import` at real size (issue 36, docs/INGEST.md §6) on the generated pmxt v2 hour
 * (scripts/bench/archive-hour.ts: 30 M rows over 40,000 tokens by default, BENCH_IMPORT_ROWS and
 * BENCH_IMPORT_TOKENS to change it; built once under .bench-data/), each run in a child process of its
 * own (scripts/bench/import-run.ts):
 * - pmxt: events/s wall clock from the plan to the last row of every table, the book pass included,
 *   against the engine's own INSERT … SELECT * of the same file into one MergeTree table (the ceiling);
 * - tardis: the busy token's day (incremental_book_L2 + trades), against the same ceiling of its CSVs;
 * - frames: the busy token's receive-stamped lines (JSON), against the engine inserting the same tick
 *   rows as JSONEachRow.
 * - pmxt-kalshi: a generated hour of pmxt's Kalshi archive (scripts/bench/kalshi-hour.ts: 10 M rows over
 *   200,000 tickers by default, BENCH_KALSHI_ROWS and BENCH_KALSHI_TICKERS), against its own ceiling (issue 40).
 * BENCH_IMPORT_ONLY=<name,…> (pmxt, pmxt-kalshi, tardis, frames) runs only those rows.
 * Targets (issue 36): pmxt ≥ 500,000 events/s and ≥ 0.3× its ceiling, peak RSS ≤ 1 GB; Tardis and
 * frames ≥ 200,000 events/s, frames ≥ 0.7× the JSON insert.
 */
const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)), '.bench-data');

/** The import bench needs neither the tick dataset nor the service (scripts/bench.ts skips them). */
export const BENCH_STANDALONE = true;

async function run(what: string, hour: ArchiveHour | (Partial<ArchiveHour> & { kalshi: KalshiHour })): Promise<ImportRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./import-run.ts', import.meta.url)), what, JSON.stringify(hour)], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    for await (const line of createInterface({ input: child.stdout! })) return JSON.parse(line) as ImportRun;
    throw new Error(`the import bench process (${what}) ended early`);
  } finally {
    child.kill('SIGTERM');
  }
}

const n = (x: number) => Math.round(x).toLocaleString('en-US');
const mib = (paths: string[]) => `${(paths.reduce((a, p) => a + statSync(p).size, 0) / 2 ** 20).toFixed(0)} MiB`;

function service(r: ImportRun): string {
  const problems = r.problems ? `, ${n(r.problems)} PROBLEMS` : '';
  const rows = `${n(r.rows / r.seconds)} rows/s all tables${problems}`;
  return `${n(r.events / r.seconds)} events/s (${r.seconds.toFixed(1)} s wall, ${r.cpuSeconds.toFixed(1)} s CPU, ${rows})`;
}

export async function benchImport(): Promise<BenchRow[]> {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const only = process.env.BENCH_IMPORT_ONLY?.split(',');
  const runs = (name: string) => !only || only.includes(name);
  const rows: BenchRow[] = [];
  let built: ArchiveHour | undefined;
  const hour = async () => (built ??= await ensureArchiveHour(ROOT, archiveOptionsFromEnv(), say));
  if (runs('pmxt')) rows.push(await benchPmxt(await hour(), say));
  if (runs('pmxt-kalshi')) rows.push(await benchKalshi(say));
  if (runs('tardis')) rows.push(await benchTardis(await hour(), say));
  if (runs('frames')) rows.push(await benchFrames(await hour(), say));
  return rows;
}

/** pmxt's Kalshi hour (issue 40): every row through the book pass (deltas are differences), against the engine's INSERT … SELECT *. */
async function benchKalshi(say: (line: string) => void): Promise<BenchRow> {
  const kalshi = kalshiHour(ROOT, kalshiOptionsFromEnv());
  say('  import: pmxt-kalshi hour…');
  const imported = await run('pmxt-kalshi', { kalshi });
  say('  import: pmxt-kalshi ceiling…');
  const top = await run('pmxt-kalshi-ceiling', { kalshi });
  return {
    workload:
      `import pmxt-kalshi hour: ${mib([kalshi.path])}, ${n(imported.events)} rows over ${n(kalshi.tickers)} tickers, ` + `peak RSS ${n(imported.maxRssMb)} MB`,
    service: service(imported),
    engine: `${n(top.rows / top.seconds)} rows/s INSERT … SELECT * into one MergeTree (market_ticker, timestamp_received), peak RSS ${n(top.maxRssMb)} MB`,
    ratio: (imported.events / imported.seconds / (top.rows / top.seconds)).toFixed(2),
  };
}

async function benchPmxt(hour: ArchiveHour, say: (line: string) => void): Promise<BenchRow> {
  say('  import: pmxt hour…');
  const pmxt = await run('pmxt', hour);
  say('  import: pmxt ceiling…');
  const pmxtCeiling = await run('pmxt-ceiling', hour);
  return {
    workload: `import pmxt v2 hour: ${mib([hour.pmxt])}, ${n(pmxt.events)} rows over ${n(hour.tokens)} tokens, peak RSS ${n(pmxt.maxRssMb)} MB`,
    service: service(pmxt),
    engine:
      `${n(pmxtCeiling.rows / pmxtCeiling.seconds)} rows/s INSERT … SELECT * into one MergeTree (asset_id, timestamp), ` +
      `peak RSS ${n(pmxtCeiling.maxRssMb)} MB`,
    ratio: (pmxt.events / pmxt.seconds / (pmxtCeiling.rows / pmxtCeiling.seconds)).toFixed(2),
  };
}

async function benchTardis(hour: ArchiveHour, say: (line: string) => void): Promise<BenchRow> {
  say('  import: Tardis day…');
  const tardis = await run('tardis', hour);
  const tardisCeiling = await run('tardis-ceiling', hour);
  return {
    workload: `import tardis day (busy token, book L2 + trades): ${mib(hour.tardis)} gzip, ${n(tardis.events)} rows, peak RSS ${n(tardis.maxRssMb)} MB`,
    service: service(tardis),
    engine: `${n(tardisCeiling.rows / tardisCeiling.seconds)} rows/s INSERT … SELECT * into one MergeTree (symbol, timestamp)`,
    ratio: (tardis.events / tardis.seconds / (tardisCeiling.rows / tardisCeiling.seconds)).toFixed(2),
  };
}

async function benchFrames(hour: ArchiveHour, say: (line: string) => void): Promise<BenchRow> {
  say('  import: frames…');
  const frames = await run('frames', hour);
  const raw = frames.baselineRows! / frames.baselineSeconds!;
  return {
    workload:
      `import frames (busy token, receive-stamped lines): ${mib([hour.frames])}, ${n(frames.events)} lines, ${n(frames.ticks)} ticks, ` +
      `peak RSS ${n(frames.maxRssMb)} MB`,
    service: `${service(frames)}; ${n(frames.ticks / frames.seconds)} ticks/s`,
    engine: `${n(raw)} ticks/s the same tick rows as JSONEachRow`,
    ratio: (frames.ticks / frames.seconds / raw).toFixed(2),
  };
}
