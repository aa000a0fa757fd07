import { createHash, randomUUID } from 'node:crypto';
import type { Engine } from '../../clickhouse/engine.js';
import { type ReplaySummary, replayLines, totalRows } from '../frame-files.js';
import { type GammaMarket, logGammaProblems, parseGammaMarkets } from '../gamma.js';
import { storeProtocols } from '../market-protocols.js';
import { BatchWriter, type IngestTable } from '../writer.js';
import { BookStates } from './book-states.js';
import { importEngineUnit, missingRows } from './engine-unit.js';
import { type LedgerEntry, readLedger, writeLedger, writeLedgerAssets } from './ledger.js';
import type { ImportPlan, LinesUnit } from './plan.js';
import { type ImportProblem, problemText } from './problems.js';

/**
 * Runs an import plan (docs/INGEST.md §6), unit after unit in the plan's order (time order for pmxt
 * hours and Tardis days, so each continues the book state of the one before): frames through the one
 * normalizer and batch writer (`replayLines`), exactly as the recorder's archive replays; pmxt and
 * Tardis through the engine (engine-unit.ts). Each unit is entered in the ledger (ledger.ts). A unit
 * that fails to read is reported with its file and position; the units after it still run.
 */

export interface ImportProgress {
  unitsDone: number;
  units: number;
  /** The unit being imported, and its rows so far of how many (0 when unknown). */
  unit: string;
  unitRows: number;
  unitRowsTotal: number;
  /** Rows read (events) of every unit so far. */
  rows: number;
  rowsPerSecond: number;
  /** Input bytes read (estimated from rows where the engine reads the file), of how many. */
  bytes: number;
  bytesTotal: number;
  /** Seconds left, from input bytes read; null until some are. */
  etaSeconds: number | null;
  elapsedMs: number;
}

export interface ImportOptions {
  assets?: ReadonlySet<string>;
  markets?: readonly GammaMarket[];
  batchRows?: number;
  onProgress?: (p: ImportProgress) => void;
  progressEveryMs?: number;
  /** Each problem as it is found (the summary keeps the first 100). */
  onProblem?: (p: ImportProblem) => void;
}

export interface ImportSummary {
  units: number;
  /** Units the ledger says are imported already (nothing read). */
  skippedUnits: number;
  /** Units that stopped on an error (their sealed batches are stored). */
  failedUnits: number;
  problems: number;
  firstProblems: ImportProblem[];
  rows: Record<IngestTable, number>;
  /** Events read (book, price_change, trade, … items) and lines the normalizer rejected. */
  events: number;
  malformed: number;
  elapsedMs: number;
}

const KEPT_PROBLEMS = 100;

/**
 * Rows per batch of the book pass's writer in an engine unit (pmxt, Tardis; frames keep the writer's
 * 50,000, as the recorder does). Every batch is a part in ticks and in each table its views fill, merged
 * later. Measured on the bench's Tardis day (1.5 M ticks through the writer): 100,000 took 16.1 s of CPU
 * against 18.2-19.4 s with 50,000, at a peak RSS of 951 MB against 796 (200,000: no faster, 1,181 MB).
 * A rerun after a kill cuts the same batches (their deduplication tokens): this is part of what makes it
 * add nothing, so an import cut short is finished by the same version.
 */
const ENGINE_UNIT_BATCH_ROWS = 100_000;

export async function runImport(engine: Engine, plan: ImportPlan, opts: ImportOptions = {}): Promise<ImportSummary> {
  const started = performance.now();
  const summary: ImportSummary = {
    units: 0,
    skippedUnits: 0,
    failedUnits: 0,
    problems: 0,
    firstProblems: [],
    rows: { ticks: 0, book_snapshots: 0, markets: 0, book_checks: 0, capture_events: 0, market_events: 0 },
    events: 0,
    malformed: 0,
    elapsedMs: 0,
  };
  const report = (p: ImportProblem) => {
    summary.problems++;
    if (summary.firstProblems.length < KEPT_PROBLEMS) summary.firstProblems.push(p);
    opts.onProblem?.(p);
  };
  for (const p of plan.problems) report(p);
  const gamma = parseGammaMarkets(opts.markets ?? []);
  const marketOf = new Map(gamma.rows.map((r) => [r.asset_id, r.market]));
  const labels = new Map(gamma.rows.map((r) => [r.asset_id, r.outcome.toUpperCase()]));
  const bytesTotal = plan.units.reduce((a, u) => a + u.bytes, 0);
  let bytesDone = 0;
  let unitBytes = 0;
  let rowsDone = 0;
  let unitRows = 0;
  let unitRowsTotal = 0;
  let current = '';
  let lastProgress = 0;
  const every = opts.progressEveryMs ?? 2000;
  const progress = (force = false) => {
    const now = performance.now();
    if (!opts.onProgress || (!force && now - lastProgress < every)) return;
    lastProgress = now;
    const elapsedMs = now - started;
    const read = bytesDone + unitBytes;
    const rows = rowsDone + unitRows;
    opts.onProgress({
      unitsDone: summary.units,
      units: plan.units.length,
      unit: current,
      unitRows,
      unitRowsTotal,
      rows,
      rowsPerSecond: Math.round(rows / (elapsedMs / 1000)),
      bytes: Math.round(read),
      bytesTotal,
      // At the end of a unit its bytes are counted done while its reader still reports them: never below 0.
      etaSeconds: read > 0 ? Math.max(0, Math.round(((elapsedMs / 1000) * (bytesTotal - read)) / read)) : null,
      elapsedMs,
    });
  };
  const ticker = setInterval(() => progress(), Math.max(50, every));
  const states = new BookStates(engine);
  try {
    // Metadata once for the whole import (labels of every unit's ticks): the writer keeps only rows not stored yet.
    if (gamma.rows.length > 0) {
      const writer = new BatchWriter(engine, { sourceId: `markets-${createHash('sha256').update(JSON.stringify(gamma.rows)).digest('hex').slice(0, 16)}` });
      for (const row of gamma.rows) writer.market(row);
      await writer.flush();
      summary.rows.markets += writer.stats.rows.markets;
      // Each token's protocol version as Gamma states it (docs/TIME-MACHINE.md §5), as the recorder stores it.
      await storeProtocols(engine, gamma.protocols);
    }
    logGammaProblems(gamma.problems, 'import --markets');
    for (const unit of plan.units) {
      current = unit.label;
      unitBytes = 0;
      unitRows = 0;
      unitRowsTotal = unit.kind === 'engine' ? unit.rows : 0;
      progress(true);
      try {
        if (unit.kind === 'lines') {
          const result = await importLinesUnit(engine, plan, unit, {
            report,
            labels: opts.markets,
            batchRows: opts.batchRows,
            onBytes: (b) => (unitBytes = b),
            onRows: (r) => (unitRows = r),
          });
          if (result === null) summary.skippedUnits++;
          else {
            for (const table of Object.keys(summary.rows) as IngestTable[]) summary.rows[table] += result.writer.rows[table];
            const n = result.normalizer;
            summary.events += Object.values(n.events).reduce((a, b) => a + b, 0);
            if (n.malformed > 0) {
              summary.malformed += n.malformed;
              // A frames file passes line for line: the normalizer's line numbers are the file's.
              report({
                file: unit.files[0],
                where: `line ${n.malformedLines.join(', ')}`,
                message: `${n.malformed} line(s) the normalizer rejected (not JSON, or an event missing a field)`,
              });
            }
            rowsDone += totalRows(result.writer);
          }
        } else {
          const result = await importEngineUnit(engine, unit, {
            report,
            assets: opts.assets,
            labels,
            marketOf,
            states,
            writer: { batchRows: opts.batchRows ?? ENGINE_UNIT_BATCH_ROWS },
            onRows: (done, total) => {
              unitRows = done;
              unitRowsTotal = total;
              unitBytes = total > 0 ? (done / total) * unit.bytes : 0;
            },
          });
          if (result.skipped) summary.skippedUnits++;
          summary.events += result.events;
          for (const [table, n] of Object.entries(result.rows)) summary.rows[table as IngestTable] += n;
          rowsDone += unitRows;
        }
      } catch (err) {
        summary.failedUnits++;
        if (unit.kind === 'engine') states.reset();
        report({ file: unit.files.join(' + ') || unit.label, where: '', message: `stopped: ${errorMessage(err)}` });
      }
      summary.units++;
      bytesDone += unit.bytes;
      unitBytes = 0;
      unitRows = 0;
      progress(true);
    }
    if (plan.missing.length > 0) summary.rows.capture_events += await recordGaps(engine, plan);
  } finally {
    clearInterval(ticker);
  }
  summary.elapsedMs = performance.now() - started;
  return summary;
}

/** Engine errors of a compressed or binary file that ends early or does not decode. */
const CUT_SHORT = [
  'ZLIB_INFLATE_FAILED',
  'ZSTD_DECODER_FAILED',
  'CANNOT_DECOMPRESS',
  'CANNOT_READ_ALL_DATA',
  'ATTEMPT_TO_READ_AFTER_EOF',
  'UNEXPECTED_END_OF_FILE',
];

/** What stopped a unit, in a line: the engine's words without their stack of contexts and paths. */
function errorMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  // chDB names the error in the message, the server's client as `type`.
  const type = (err as { type?: unknown }).type;
  const cut = CUT_SHORT.find((t) => t === type || text.includes(`(${t})`));
  if (cut) return `the file is cut short or corrupt (${cut})`;
  return text
    .replace(/^(Code: \d+\. )?DB::Exception: /, '')
    .split('\n')[0]
    .replace(/: \(in file\/uri [^)]*\).*$/, '');
}

interface LinesUnitContext {
  report: (p: ImportProblem) => void;
  labels?: readonly GammaMarket[];
  batchRows?: number;
  onBytes: (bytes: number) => void;
  onRows: (rows: number) => void;
}

/**
 * A frames or recorder file through the normalizer; null when the ledger has it already. Its rows are
 * made idempotent by the writer's deduplication tokens (a rerun cuts the same batches); the ledger
 * records it for `--status` and /v1/coverage.
 */
async function importLinesUnit(engine: Engine, plan: ImportPlan, unit: LinesUnit, ctx: LinesUnitContext): Promise<ReplaySummary | null> {
  const key = `${plan.format}:${unit.sourceId}`;
  const entries = await readLedger(engine, key);
  if (entries.some((e) => e.status === 'complete')) return null;
  const perAsset = new Map<string, { events: number; from: number; to: number }>();
  const result = await replayLines(engine, unit.lines({ report: ctx.report, onBytes: ctx.onBytes, assets: () => perAsset.keys() }), {
    sourceId: unit.sourceId,
    markets: ctx.labels,
    batchRows: ctx.batchRows,
    perAsset,
    progressEveryMs: 250,
    onProgress: (p) => ctx.onRows(p.lines),
  });
  const entry: LedgerEntry = {
    run: randomUUID(),
    unit: key,
    format: plan.format,
    files: unit.files,
    bytes: unit.bytes,
    digest: unit.sourceId,
    sourceRows: result.normalizer.lines,
    rowsHash: '0',
    assets: [],
    spanFrom: 0,
    spanTo: 0,
    events: [...perAsset.values()].reduce((a, b) => a + b.events, 0),
    storedRows: totalRows(result.writer),
    status: 'complete',
    at: Date.now(),
  };
  await writeLedger(engine, entry);
  await writeLedgerAssets(engine, entry, perAsset);
  return result;
}

/**
 * The `source_missing` records of every hour (day) between the files that none covers, once per hour:
 * the ledger names the hours recorded already. Returns the capture rows written.
 */
async function recordGaps(engine: Engine, plan: ImportPlan): Promise<number> {
  const hours: number[] = [];
  for (const [a, b] of plan.missing) for (let t = a; t < b; t += plan.step) hours.push(t);
  const name = (t: number) => new Date(t).toISOString().slice(0, plan.step === 3_600_000 ? 13 : 10);
  const keys = hours.map((t) => `${plan.format}-missing:${name(t)}`);
  const recorded = new Set<string>();
  for (let i = 0; i < keys.length; i += 1000) {
    const rows = await engine.rows<{ unit: string }>(`SELECT DISTINCT unit FROM import_ledger WHERE unit IN {keys:Array(String)}`, {
      params: { keys: keys.slice(i, i + 1000) },
    });
    for (const r of rows) recorded.add(r.unit);
  }
  const todo = hours.filter((_, i) => !recorded.has(keys[i]));
  if (todo.length === 0) return 0;
  const writer = new BatchWriter(engine, { sourceId: `${plan.format}-gaps-${createHash('sha256').update(todo.join()).digest('hex').slice(0, 16)}` });
  for (const t of todo) {
    for (const row of missingRows(`${plan.format}-missing-${name(t)}`, t, t + plan.step, Math.floor(t / plan.step) * 2 ** 32)) writer.capture(row);
  }
  await writer.flush();
  const run = randomUUID();
  for (const t of todo) {
    await writeLedger(engine, {
      run,
      unit: `${plan.format}-missing:${name(t)}`,
      format: plan.format,
      files: [],
      bytes: 0,
      digest: '',
      sourceRows: 0,
      rowsHash: '0',
      assets: [],
      spanFrom: t,
      spanTo: t + plan.step,
      events: 0,
      storedRows: 2,
      status: 'complete',
      at: Date.now(),
    });
  }
  return writer.stats.rows.capture_events;
}

export function summaryText(plan: ImportPlan, s: ImportSummary): string {
  const r = s.rows;
  const lines = [
    `Imported ${s.units} unit(s) of ${plan.format} in ${(s.elapsedMs / 1000).toFixed(1)} s: ` +
      `${s.events} events, ${Math.round(s.events / (s.elapsedMs / 1000))} events/s` +
      (s.skippedUnits > 0 ? ` (${s.skippedUnits} already imported: nothing read)` : ''),
    `  written  ticks ${r.ticks}, book_snapshots ${r.book_snapshots}, markets ${r.markets}, market_events ${r.market_events}, book_checks ${r.book_checks},` +
      ` capture_events ${r.capture_events} (rows stored by an earlier run are dropped by the engine)`,
  ];
  for (const note of plan.notes) lines.push(`  note     ${note}`);
  if (plan.missing.length > 0)
    lines.push(`  missing  ${plan.missing.map(([a, b]) => `${new Date(a).toISOString()} → ${new Date(b).toISOString()}`).join(', ')} (source_missing)`);
  if (s.problems > 0) {
    lines.push(`  problems ${s.problems}${s.failedUnits > 0 ? `, ${s.failedUnits} unit(s) stopped` : ''}:`);
    for (const p of s.firstProblems.slice(0, 20)) lines.push(`    ${problemText(p)}`);
    if (s.problems > 20) lines.push(`    … ${s.problems - 20} more`);
  }
  return lines.join('\n');
}

export function dryRunText(plan: ImportPlan): string {
  const lines = [`Would import ${plan.units.length} unit(s) of ${plan.format} (nothing is written):`];
  for (const u of plan.units)
    lines.push(`  ${u.label}: ${u.bytes} bytes${u.span ? `, covers ${new Date(u.span[0]).toISOString()} → ${new Date(u.span[1]).toISOString()}` : ''}`);
  for (const [a, b] of plan.missing) lines.push(`  missing ${new Date(a).toISOString()} → ${new Date(b).toISOString()}: a source_missing gap`);
  for (const note of plan.notes) lines.push(`  note ${note}`);
  for (const p of plan.problems) lines.push(`  problem ${problemText(p)}`);
  return lines.join('\n');
}
