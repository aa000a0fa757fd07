import { createHash, randomUUID } from 'node:crypto';
import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Engine, LocalFile } from '../../clickhouse/engine.js';
import { DAY } from '../../time.js';
import { compressionOf, openDecompressed } from '../compressed-files.js';
import { frameFileSourceId } from '../frame-files.js';
import { splitLines } from '../lines.js';
import { type EngineUnit, type OpenedSource, UNIT_SEQ_SPAN } from './engine-unit.js';
import { frameLines, type LinesContext, plainLines } from './frames.js';
import { openPmxt, type PmxtFile, pmxtBulkSql, pmxtEventsSql, pmxtHour, rowPlace } from './pmxt.js';
import { openPmxtKalshi, pmxtKalshiEventsSql, pmxtKalshiHour } from './pmxt-kalshi.js';
import type { ImportProblem } from './problems.js';
import { expandInputs } from './sources.js';
import {
  BOOK_HEADER,
  LINES_STRUCTURE,
  TARDIS_STAGE_SETTINGS,
  type TardisKind,
  type TardisSource,
  TRADES_HEADER,
  tardisEventsSql,
  tardisName,
  tardisStageSql,
  tardisStageTable,
} from './tardis.js';

/**
 * What an import will read (docs/INGEST.md §6): the input files grouped into units — a frames file,
 * a pmxt hour, a Tardis day and symbol — planned from what the files hold (names, Parquet footers):
 * frames go line by line through the normalizer (LinesUnit), pmxt and Tardis through the engine
 * (engine-unit.ts). Nothing is written while planning (`--dry-run` prints the plan).
 */

export type ImportFormat = 'frames' | 'recorder' | 'pmxt' | 'pmxt-kalshi' | 'tardis';
export const FORMATS: readonly ImportFormat[] = ['frames', 'recorder', 'pmxt', 'pmxt-kalshi', 'tardis'];

const HOUR = 3_600_000;

/** A file replayed line by line through the normalizer (frames, recorder). */
export interface LinesUnit {
  kind: 'lines';
  label: string;
  files: string[];
  bytes: number;
  sourceId: string;
  span?: [number, number];
  rows?: number;
  /** The file's lines, in arrays (one per chunk read). */
  lines(ctx: LinesContext): AsyncIterable<string[]>;
}

export type ImportUnit = LinesUnit | (EngineUnit & { kind: 'engine' });

export interface ImportPlan {
  format: ImportFormat;
  units: ImportUnit[];
  /** Spans between the files that no file covers: `source_missing` (one record pair per hour or day). */
  missing: [number, number][];
  /** The length of a unit of the format's span (an hour, a day), for the gap records. */
  step: number;
  /** Files that could not be planned (not readable, wrong kind): reported, the rest goes on. */
  problems: ImportProblem[];
  /** Files left out on purpose, said once (Tardis's derived data, trades taken from files of their own). */
  notes: string[];
}

/** Which files of a directory an import takes (a README or checksum file next to the data is not input). */
const DIRECTORY_FILES: Record<ImportFormat, (name: string) => boolean> = {
  frames: (n) => /\.(jsonl|ndjson|json|txt|log)(\.gz|\.zst)?$/.test(n),
  recorder: (n) => /\.jsonl(\.gz|\.zst)?$/.test(n),
  pmxt: (n) => n.endsWith('.parquet'),
  'pmxt-kalshi': (n) => n.endsWith('.parquet'),
  tardis: (n) => /\.csv(\.gz|\.zst)?$/.test(n),
};

export interface PlanOptions {
  from?: number;
  to?: number;
}

/** Bytes of each end hashed into a digest: the head tells contents apart, a Parquet footer describes the whole file. */
const FINGERPRINT_BYTES = 64 * 1024;

/** sha-256 of a file's first and last 64 KiB and its size (the ledger's digest of a file version). */
export async function fingerprint(path: string): Promise<string> {
  const { size } = await stat(path);
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(Math.min(size, FINGERPRINT_BYTES));
    await file.read(head, 0, head.length, 0);
    const tail = Buffer.alloc(Math.min(size, FINGERPRINT_BYTES));
    await file.read(tail, 0, tail.length, size - tail.length);
    return createHash('sha256').update(head).update(tail).update(String(size)).digest('hex').slice(0, 16);
  } finally {
    await file.close();
  }
}

/** seq base of a unit's span (UNIT_SEQ_SPAN values per hour or day), or from its digest when it has none. */
function seqBase(span: [number, number] | undefined, step: number, digest: string): number {
  if (span) return Math.floor(span[0] / step) * UNIT_SEQ_SPAN;
  // 2^52 upwards: far from any hour's (hour 2^20 is in 2089), below 2^53.
  return 2 ** 52 + (Number.parseInt(digest.slice(0, 5), 16) % 2 ** 20) * UNIT_SEQ_SPAN;
}

export async function planImport(format: ImportFormat, inputs: readonly string[], opts: PlanOptions = {}): Promise<ImportPlan> {
  const files = await expandInputs(inputs, DIRECTORY_FILES[format]);
  const plan: ImportPlan = { format, units: [], missing: [], step: format === 'tardis' ? DAY : HOUR, problems: [], notes: [] };
  const inRange = (t: number) => (opts.from === undefined || t >= opts.from) && (opts.to === undefined || t < opts.to);
  if (format === 'recorder') {
    // The recorder's archive holds its own capture records: its lines pass as they are, as `ingest replay` passes them.
    for (const path of files) {
      const { size } = await stat(path);
      plan.units.push({
        kind: 'lines',
        label: path,
        files: [path],
        bytes: size,
        sourceId: await frameFileSourceId(path),
        lines: (ctx) => plainLines(path, ctx),
      });
    }
  } else if (format === 'frames') {
    for (const path of files) {
      const sourceId = `${format}-${await fingerprint(path)}`;
      const { size } = await stat(path);
      plan.units.push({ kind: 'lines', label: path, files: [path], bytes: size, sourceId, lines: (ctx) => frameLines(path, sourceId, ctx) });
    }
  } else if (format === 'pmxt') {
    await planPmxt(files, plan, inRange, POLYMARKET);
  } else if (format === 'pmxt-kalshi') {
    await planPmxt(files, plan, inRange, KALSHI);
  } else {
    await planTardis(files, plan, inRange);
  }
  if (plan.units.length === 0 && plan.problems.length === 0) {
    const range = opts.from !== undefined || opts.to !== undefined ? ' in the range asked for' : '';
    plan.problems.push({ file: inputs.join(' '), where: '', message: `no ${format} file${range} (${DIRECTORY_HINT[format]})` });
  }
  // A Kalshi delta is a difference: each hour must fold after the one before it, whatever the order the files were named in.
  if (format === 'pmxt-kalshi') plan.units.sort((a, b) => (a.span?.[0] ?? Number.MAX_SAFE_INTEGER) - (b.span?.[0] ?? Number.MAX_SAFE_INTEGER));
  plan.missing = missingBetween(plan.units, plan.step);
  return plan;
}

const DIRECTORY_HINT: Record<ImportFormat, string> = {
  frames: 'a directory is searched for .jsonl, .ndjson, .json, .txt and .log files, plain, .gz or .zst',
  recorder: 'a directory is searched for .jsonl files, plain, .gz or .zst',
  pmxt: 'a directory is searched for polymarket_orderbook_YYYY-MM-DDTHH.parquet files',
  'pmxt-kalshi': 'a directory is searched for kalshi_orderbook_YYYY-MM-DDTHH.parquet files',
  tardis: 'a directory is searched for {exchange}_{incremental_book_L2|trades}_{YYYY-MM-DD}_{symbol}.csv[.gz] files',
};

/** One of pmxt's hourly archives: its file names, footer check and SQL (pmxt.ts, pmxt-kalshi.ts). */
interface PmxtArchive {
  format: 'pmxt' | 'pmxt-kalshi';
  name: string;
  hour(path: string): number | null;
  open(path: string): Promise<PmxtFile>;
  kind(pmxt: PmxtFile): string;
  events(pmxt: PmxtFile, file: LocalFile): string;
  /** The rows the engine inserts into ticks itself; none when no row states its best bid and ask. */
  bulk?(pmxt: PmxtFile, file: LocalFile): string;
}

const POLYMARKET: PmxtArchive = {
  format: 'pmxt',
  name: 'polymarket_orderbook_YYYY-MM-DDTHH.parquet',
  hour: pmxtHour,
  open: openPmxt,
  kind: (pmxt) => `pmxt v${pmxt.version}`,
  events: pmxtEventsSql,
  bulk: pmxtBulkSql,
};

const KALSHI: PmxtArchive = {
  format: 'pmxt-kalshi',
  name: 'kalshi_orderbook_YYYY-MM-DDTHH.parquet',
  hour: pmxtKalshiHour,
  open: openPmxtKalshi,
  kind: () => 'pmxt Kalshi',
  events: (_pmxt, file) => pmxtKalshiEventsSql(file),
};

async function planPmxt(files: string[], plan: ImportPlan, inRange: (t: number) => boolean, archive: PmxtArchive): Promise<void> {
  for (const path of files) {
    const hour = archive.hour(path);
    if (hour !== null && !inRange(hour)) continue;
    let pmxt: PmxtFile;
    try {
      pmxt = await archive.open(path);
    } catch (err) {
      plan.problems.push({ file: path, where: '', message: (err as Error).message });
      continue;
    }
    if (hour === null) plan.problems.push({ file: path, where: '', message: `not named ${archive.name}: imported without coverage records` });
    const digest = await fingerprint(path);
    const { size } = await stat(path);
    const span: [number, number] | undefined = hour === null ? undefined : [hour, hour + HOUR];
    const name = hour === null ? basename(path) : new Date(hour).toISOString().slice(0, 13);
    plan.units.push({
      kind: 'engine',
      format: archive.format,
      key: `${archive.format}:${name}`,
      label: `${basename(path)} (${archive.kind(pmxt)}, ${pmxt.rows} rows in ${pmxt.rowGroups.length} row groups)`,
      files: [path],
      bytes: size,
      digest,
      rows: pmxt.rows,
      span,
      run: `${archive.format}-${name}`,
      seqBase: seqBase(span, HOUR, digest),
      bulk: archive.bulk !== undefined,
      open: (engine) => openPmxtSource(engine, path, pmxt, archive),
    });
  }
}

async function openPmxtSource(engine: Engine, path: string, pmxt: PmxtFile, archive: PmxtArchive): Promise<OpenedSource> {
  const file = await engine.localFile(path, 'Parquet', pmxt.structure, 'none');
  const events = archive.events(pmxt, file);
  return {
    events,
    bulk: archive.bulk?.(pmxt, file),
    params: file.params,
    settings: file.settings,
    async problems() {
      const rows = await engine.rows<{ n: number; reason: string; bad: number }>(
        `SELECT n, reason, count() OVER () AS bad FROM (${events}) WHERE reason != '' ORDER BY n LIMIT 100${file.settings ? ` SETTINGS ${file.settings}` : ''}`,
        { params: file.params },
      );
      const out = rows.map((r) => ({ file: path, where: rowPlace(pmxt, Number(r.n)), message: `${r.reason}: the row is skipped` }));
      const bad = Number(rows[0]?.bad ?? 0);
      if (bad > rows.length) out.push({ file: path, where: '', message: `${bad - rows.length} more rows skipped for the same kinds of reasons` });
      return out;
    },
    release: () => file.release(),
  };
}

async function planTardis(files: string[], plan: ImportPlan, inRange: (t: number) => boolean): Promise<void> {
  interface Day {
    exchange: string;
    day: number;
    own: Map<string, Partial<Record<TardisKind, string>>>;
    grouped: Partial<Record<TardisKind, string[]>>;
  }
  const days = new Map<string, Day>();
  const derived: string[] = [];
  for (const path of files) {
    const name = tardisName(path);
    if (!name) {
      plan.problems.push({
        file: path,
        where: '',
        message: 'not named {exchange}_{incremental_book_L2|trades}_{YYYY-MM-DD}_{symbol}.csv[.gz] (tardis-dev download name)',
      });
      continue;
    }
    if (!name.kind) {
      derived.push(basename(path));
      continue;
    }
    if (!inRange(name.day)) continue;
    const key = `${name.exchange}_${new Date(name.day).toISOString().slice(0, 10)}`;
    let day = days.get(key);
    if (!day) days.set(key, (day = { exchange: name.exchange, day: name.day, own: new Map(), grouped: {} }));
    if (name.grouped) {
      (day.grouped[name.kind] ??= []).push(path);
      continue;
    }
    const own = day.own.get(name.symbol) ?? {};
    if (own[name.kind]) {
      plan.problems.push({ file: path, where: '', message: `a second ${name.kind} file for ${key}_${name.symbol}: skipped` });
      continue;
    }
    own[name.kind] = path;
    day.own.set(name.symbol, own);
  }
  if (derived.length > 0) {
    plan.notes.push(
      `skipped ${derived.length} file(s) of Tardis data derived from incremental_book_L2 and trades ` +
        `(${derived.slice(0, 3).join(', ')}${derived.length > 3 ? ', …' : ''})`,
    );
  }
  for (const [key, day] of days) {
    // A grouped file (every symbol's rows) gives a symbol the rows it has no file of its own for.
    const sources = new Map<string, TardisSource[]>();
    for (const [symbol, own] of day.own) {
      sources.set(
        symbol,
        (Object.entries(own) as [TardisKind, string][]).map(([kind, path]) => ({ kind, path })),
      );
    }
    for (const [kind, paths] of Object.entries(day.grouped) as [TardisKind, string[]][]) {
      for (const path of paths) {
        let symbols: Set<string>;
        try {
          symbols = await csvSymbols(path);
        } catch (err) {
          plan.problems.push({ file: path, where: '', message: `stopped: ${(err as Error).message}` });
          continue;
        }
        let shadowed = 0;
        for (const symbol of symbols) {
          const list = sources.get(symbol) ?? [];
          if (list.some((s) => s.kind === kind)) {
            shadowed++;
            continue;
          }
          list.push({ kind, path, symbol });
          sources.set(symbol, list);
        }
        if (shadowed > 0) plan.notes.push(`${basename(path)}: the ${kind} of ${shadowed} symbol(s) are taken from their own files`);
      }
    }
    for (const [symbol, list] of [...sources].sort(([a], [b]) => (a < b ? -1 : 1))) {
      list.sort((a, b) => (a.kind < b.kind ? -1 : 1));
      const prints = await Promise.all(list.map((s) => fingerprint(s.path)));
      const sizes = await Promise.all(list.map(async (s) => (await stat(s.path)).size));
      const digest = createHash('sha256').update(`${symbol}:${prints.join()}`).digest('hex').slice(0, 16);
      const span: [number, number] = [day.day, day.day + DAY];
      const name = `${key}_${symbol}`;
      plan.units.push({
        kind: 'engine',
        format: 'tardis',
        key: `tardis:${name}`,
        label: `${name} (${list.map((s) => `${s.kind}${s.symbol ? ` from ${basename(s.path)}` : ''}`).join(' + ')})`,
        files: list.map((s) => s.path),
        bytes: sizes.reduce((a, b) => a + b, 0),
        digest,
        rows: 0,
        span,
        run: `tardis-${name}`,
        seqBase: seqBase(span, DAY, digest),
        bulk: false,
        open: (engine) => openTardisSource(engine, list, day.day),
      });
    }
  }
}

/** The symbols a grouped Tardis file holds (its second column). */
async function csvSymbols(path: string): Promise<Set<string>> {
  const { chunks } = await openDecompressed(path);
  const symbols = new Set<string>();
  let first = true;
  for await (const line of splitLines(chunks)) {
    if (first) {
      first = false;
      continue;
    }
    const a = line.indexOf(',');
    const b = line.indexOf(',', a + 1);
    if (a > 0 && b > a + 1) symbols.add(line.slice(a + 1, b));
  }
  return symbols;
}

/** Checks a Tardis file's header line (the engine reads what follows it). */
async function checkHeader(source: TardisSource): Promise<void> {
  const expected = source.kind === 'trades' ? TRADES_HEADER : BOOK_HEADER;
  const { chunks, raw } = await openDecompressed(source.path);
  let header: string | undefined;
  try {
    for await (const line of splitLines(chunks, { maxLineBytes: 4096 })) {
      header = line;
      break;
    }
  } finally {
    raw.destroy();
  }
  if (header !== expected) throw new Error(`line 1: header is not Tardis ${source.kind}'s (expected "${expected}")`);
}

/** Stages a Tardis unit's files (tardis.ts): the engine parses, checks and merges them into one table. */
async function openTardisSource(engine: Engine, sources: TardisSource[], day: number): Promise<OpenedSource> {
  for (const s of sources) await checkHeader(s);
  const stage = `_import_stage_${randomUUID().replaceAll('-', '')}`;
  const files: { source: TardisSource; file: LocalFile; param: string }[] = [];
  const release = async () => {
    await engine.command(`DROP TABLE IF EXISTS ${stage}`);
    for (const f of files) await f.file.release();
  };
  try {
    for (const [i, source] of sources.entries()) {
      const compression = await compressionOf(source.path);
      files.push({ source, file: await engine.localFile(source.path, 'LineAsString', LINES_STRUCTURE, compression), param: `tardis_symbol_${i}` });
    }
    await engine.command(tardisStageTable(stage));
    const params = Object.assign({}, ...files.map((f) => ({ ...f.file.params, ...(f.source.symbol ? { [f.param]: f.source.symbol } : {}) })));
    const settings = [...new Set([...files.map((f) => f.file.settings).filter(Boolean), ...TARDIS_STAGE_SETTINGS])].join(', ');
    await engine.command(`${tardisStageSql(stage, files, day * 1000)}${settings ? ` SETTINGS ${settings}` : ''}`, { params });
  } catch (err) {
    await release().catch(() => {});
    throw err;
  }
  return {
    events: tardisEventsSql(stage),
    params: {},
    settings: '',
    async problems() {
      const rows = await engine.rows<{ src: number; line: number; reason: string; bad: number }>(
        `SELECT src, line, reason, count() OVER () AS bad FROM ${stage} WHERE reason != '' ORDER BY src, line LIMIT 100`,
      );
      const fileOf = (src: number) => files.find((f) => (src === 0) === (f.source.kind === 'incremental_book_L2'))?.source.path ?? '';
      const out = rows.map((r) => ({ file: fileOf(Number(r.src)), where: `line ${r.line}`, message: r.reason }));
      const bad = Number(rows[0]?.bad ?? 0);
      if (bad > rows.length) out.push({ file: sources.map((s) => s.path).join(' + '), where: '', message: `${bad - rows.length} more lines skipped` });
      return out;
    },
    release,
  };
}

/**
 * The spans between the first and the last unit that no unit covers, as [start, end) runs of whole
 * steps: computed from the units present (never by walking a range asked for, which may be huge).
 */
function missingBetween(units: ImportUnit[], step: number): [number, number][] {
  const starts = [...new Set(units.flatMap((u) => (u.span ? [u.span[0]] : [])))].sort((a, b) => a - b);
  const out: [number, number][] = [];
  for (let i = 1; i < starts.length; i++) if (starts[i] - starts[i - 1] > step) out.push([starts[i - 1] + step, starts[i]]);
  return out;
}
