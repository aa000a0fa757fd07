import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { EmbeddedEngine } from '../../src/clickhouse/embedded.js';
import { runMigrations } from '../../src/clickhouse/migrations.js';
import { planImport } from '../../src/ingest/import/plan.js';
import { runImport } from '../../src/ingest/import/run.js';
import { setLogLevel } from '../../src/log.js';
import type { ArchiveHour } from './archive-hour.js';
import { ensureKalshiHour, type KalshiHour } from './kalshi-hour.js';

/**
 * The child side of the import bench (scripts/bench/import.ts): `import-run.ts <what> <archive.json>`,
 * one run in a fresh chDB directory (one per process), timed from the plan to the last row stored.
 * - `pmxt`, `tardis`, `frames`: `npm run import` of the generated hour's pmxt file, its busy token's
 *   Tardis day, its busy token's frame lines; every table and the book pass included.
 * - `pmxt-ceiling`, `tardis-ceiling`: the engine alone, `INSERT … SELECT *` of the same files into one
 *   MergeTree table of their own columns ordered by (asset, time): the ceiling an import can approach.
 * - `pmxt-kalshi`, `pmxt-kalshi-ceiling`: the same two of the generated pmxt-kalshi hour (kalshi-hour.ts; built
 *   here, before the clock starts, when it is not there yet).
 * - `frames` also times its baseline after the import: the stored tick rows, serialized beforehand as
 *   JSONEachRow, inserted by the engine in batches of the writer's size (frames are JSON text).
 * Prints one JSON line (ImportRun). Peak RSS is the whole child's (the engine runs in it), taken before
 * any baseline.
 */
export interface ImportRun {
  seconds: number;
  cpuSeconds: number;
  /** Input rows (pmxt, Tardis) or lines (frames) read. */
  events: number;
  ticks: number;
  /** Rows stored in every table the import writes. */
  rows: number;
  problems: number;
  maxRssMb: number;
  baselineSeconds?: number;
  baselineRows?: number;
}

const [what, archiveJson] = process.argv.slice(2);
setLogLevel('error');
const hour = JSON.parse(archiveJson) as ArchiveHour & { kalshi?: KalshiHour };
const dir = mkdtempSync(join(tmpdir(), 'tickhouse-bench-import-'));
const engine = EmbeddedEngine.open(join(dir, 'engine'), 4);

try {
  await runMigrations(engine);
  if (what.startsWith('pmxt-kalshi')) await ensureKalshiHour(engine, hour.kalshi!, (line) => process.stderr.write(`${line}\n`));
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const timed = () => {
    const c = process.cpuUsage(cpu0);
    return { seconds: (performance.now() - started) / 1000, cpuSeconds: (c.user + c.system) / 1e6 };
  };
  let run: ImportRun;
  if (what === 'pmxt-ceiling') {
    const rows = await ceiling(engine, [hour.pmxt], 'Parquet', 'asset_id, timestamp');
    run = { ...timed(), events: rows, ticks: 0, rows, problems: 0, maxRssMb: maxRssMb() };
  } else if (what === 'pmxt-kalshi-ceiling') {
    const rows = await ceiling(engine, [hour.kalshi!.path], 'Parquet', 'market_ticker, timestamp_received');
    run = { ...timed(), events: rows, ticks: 0, rows, problems: 0, maxRssMb: maxRssMb() };
  } else if (what === 'tardis-ceiling') {
    const rows = await ceiling(engine, hour.tardis, 'CSVWithNames', 'symbol, timestamp');
    run = { ...timed(), events: rows, ticks: 0, rows, problems: 0, maxRssMb: maxRssMb() };
  } else if (what === 'pmxt' || what === 'pmxt-kalshi' || what === 'tardis' || what === 'frames') {
    const files = what === 'pmxt' ? [hour.pmxt] : what === 'pmxt-kalshi' ? [hour.kalshi!.path] : what === 'tardis' ? hour.tardis : [hour.frames];
    const summary = await runImport(engine, await planImport(what, files));
    run = {
      ...timed(),
      events: summary.events,
      ticks: summary.rows.ticks,
      rows: Object.values(summary.rows).reduce((a, b) => a + b, 0),
      problems: summary.problems,
      maxRssMb: maxRssMb(),
    };
    if (what === 'frames') Object.assign(run, await jsonBaseline(engine));
  } else {
    throw new Error(`unknown run ${what}`);
  }
  process.stdout.write(`${JSON.stringify(run)}\n`);
} finally {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}

function maxRssMb(): number {
  return Math.round(process.resourceUsage().maxRSS / 1024);
}

/**
 * The engine's own INSERT … SELECT of `files` into one MergeTree table of the files' columns (types as
 * the engine reads them), ordered by `key`, with the engine's default settings: rows inserted.
 */
async function ceiling(engine: EmbeddedEngine, files: string[], format: string, key: string): Promise<number> {
  let rows = 0;
  for (const [i, path] of files.entries()) {
    const table = `ceiling_${i}`;
    const source = `file({path:String}, ${format})`;
    const params = { path };
    await engine.command(`CREATE TABLE ${table} ENGINE = MergeTree ORDER BY (${key}) SETTINGS allow_nullable_key = 1 AS SELECT * FROM ${source} LIMIT 0`, {
      params,
    });
    await engine.command(`INSERT INTO ${table} SELECT * FROM ${source}`, { params });
    const [{ n }] = await engine.rows<{ n: string }>(`SELECT count() AS n FROM ${table}`);
    rows += Number(n);
  }
  return rows;
}

/**
 * The tick rows the import stored, serialized beforehand as JSONEachRow (seq shifted so deduplication
 * keeps them), inserted again by the engine alone in batches of the writer's default size, into the
 * same table with its views: what inserting the same rows as JSON costs the engine.
 */
async function jsonBaseline(engine: EmbeddedEngine): Promise<{ baselineSeconds: number; baselineRows: number }> {
  // Streamed: one result of every row as text is longer than a string may be.
  const stream = engine.stream(
    `SELECT asset_id, toUnixTimestamp64Milli(t) AS t, seq + 1 AS seq, event, side, best_bid, best_ask, price, size, book_side, market,
       toUnixTimestamp64Micro(local_t) AS local_t
     FROM ticks ORDER BY asset_id, t, seq SETTINGS output_format_json_quote_64bit_integers = 0`,
    'JSONEachRow',
  );
  const bodies: string[] = [];
  let lines: string[] = [];
  let rows = 0;
  for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
    rows++;
    lines.push(line);
    if (lines.length === 50_000) {
      bodies.push(lines.join('\n'));
      lines = [];
    }
  }
  if (lines.length > 0) bodies.push(lines.join('\n'));
  const started = performance.now();
  for (const body of bodies) await engine.insertJsonEachRow('ticks', body, { deduplicate_blocks_in_dependent_materialized_views: 1 });
  return { baselineSeconds: (performance.now() - started) / 1000, baselineRows: rows };
}
