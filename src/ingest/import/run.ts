import type { Engine } from '../../clickhouse/engine.js';
import { type ReplaySummary, replayLines, totalRows } from '../frame-files.js';
import { type GammaMarket, parseGammaMarkets } from '../gamma.js';
import type { IngestTable } from '../writer.js';
import type { ImportPlan, ImportUnit } from './plan.js';
import { type ImportProblem, problemText } from './problems.js';

/**
 * Runs an import plan (docs/INGEST.md §6): unit after unit through the one normalizer and batch
 * writer (`replayLines`), exactly as the recorder's archive replays. A unit that fails to read is
 * reported with its file and position; the units after it still run.
 */

export interface ImportProgress {
  unitsDone: number;
  units: number;
  rows: number;
  rowsPerSecond: number;
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

export async function runImport(engine: Engine, plan: ImportPlan, opts: ImportOptions = {}): Promise<ImportSummary> {
  const started = performance.now();
  const summary: ImportSummary = {
    units: 0,
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
  const marketRows = parseGammaMarkets(opts.markets ?? []).rows;
  const marketOf = new Map(marketRows.map((r) => [r.asset_id, r.market]));
  const units: ImportUnit[] = plan.gaps ? [...plan.units, plan.gaps] : plan.units;
  const totalBytes = units.reduce((a, u) => a + u.bytes, 0);
  let doneBytes = 0;
  let unitBytes = 0;
  let doneRows = 0;
  const progress = (rowsNow: number): ImportProgress => {
    const elapsedMs = performance.now() - started;
    const read = doneBytes + unitBytes;
    const rows = doneRows + rowsNow;
    return {
      unitsDone: summary.units,
      units: units.length,
      rows,
      rowsPerSecond: Math.round(rows / (elapsedMs / 1000)),
      // At the end of a unit its bytes are counted done while its reader still reports them: never below 0.
      etaSeconds: read > 0 ? Math.max(0, Math.round(((elapsedMs / 1000) * (totalBytes - read)) / read)) : null,
      elapsedMs,
    };
  };
  for (const unit of units) {
    unitBytes = 0;
    const ctx = { report, onBytes: (b: number) => (unitBytes = b), assets: opts.assets, marketOf };
    let result: ReplaySummary | null = null;
    try {
      result = await replayLines(engine, unit.lines(ctx), {
        sourceId: unit.sourceId,
        markets: opts.markets,
        batchRows: opts.batchRows,
        progressEveryMs: opts.progressEveryMs,
        onProgress: opts.onProgress && ((p) => opts.onProgress?.(progress(p.rowsWritten))),
      });
    } catch (err) {
      summary.failedUnits++;
      report({ file: unit.files.join(' + ') || unit.label, where: '', message: `stopped: ${(err as Error).message}` });
    }
    summary.units++;
    doneBytes += unit.bytes;
    if (result) {
      for (const table of Object.keys(summary.rows) as IngestTable[]) summary.rows[table] += result.writer.rows[table];
      const n = result.normalizer;
      summary.events += Object.values(n.events).reduce((a, b) => a + b, 0);
      if (n.malformed > 0) {
        summary.malformed += n.malformed;
        // A frames file passes line for line: the normalizer's line numbers are the file's.
        const where = plan.format === 'frames' || plan.format === 'recorder' ? `line ${n.malformedLines.join(', ')}` : '';
        report({ file: unit.files.join(' + '), where, message: `${n.malformed} line(s) the normalizer rejected (not JSON, or an event missing a field)` });
      }
      doneRows += totalRows(result.writer);
    }
    opts.onProgress?.(progress(0));
  }
  summary.elapsedMs = performance.now() - started;
  return summary;
}

export function summaryText(plan: ImportPlan, s: ImportSummary): string {
  const r = s.rows;
  const lines = [
    `Imported ${s.units} unit(s) of ${plan.format} in ${(s.elapsedMs / 1000).toFixed(1)} s: ` +
      `${s.events} events, ${Math.round(s.events / (s.elapsedMs / 1000))} events/s`,
    `  written  ticks ${r.ticks}, book_snapshots ${r.book_snapshots}, markets ${r.markets}, market_events ${r.market_events}, book_checks ${r.book_checks},` +
      ` capture_events ${r.capture_events} (batches stored by an earlier run are dropped by the engine)`,
  ];
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
  for (const p of plan.problems) lines.push(`  problem ${problemText(p)}`);
  return lines.join('\n');
}
