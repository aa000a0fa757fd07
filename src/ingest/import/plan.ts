import { createHash } from 'node:crypto';
import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { frameFileSourceId } from '../frame-files.js';
import { missingLines, missingSpans, spanLines } from './coverage-lines.js';
import { frameLines, plainLines } from './frames.js';
import { openPmxt, pmxtHour, pmxtLines } from './pmxt.js';
import type { ImportProblem } from './problems.js';
import { expandInputs } from './sources.js';
import { type TardisKind, tardisLines, tardisName } from './tardis.js';

/**
 * What an import will read (docs/INGEST.md §6): the input files grouped into units — a frames file,
 * a pmxt hour, a Tardis day and symbol — each replayed under a source id derived from its bytes, so
 * a rerun (or a rerun after kill -9) sends the same batches with the same deduplication tokens.
 */

export type ImportFormat = 'frames' | 'recorder' | 'pmxt' | 'tardis';
export const FORMATS: readonly ImportFormat[] = ['frames', 'recorder', 'pmxt', 'tardis'];

const HOUR = 3_600_000;
const DAY = 86_400_000;

export interface UnitContext {
  report: (p: ImportProblem) => void;
  /** Input bytes of the unit read so far (for the ETA). */
  onBytes: (bytes: number) => void;
  assets?: ReadonlySet<string>;
  /** Asset id → condition id, for Tardis rows (they name none). */
  marketOf: ReadonlyMap<string, string>;
}

export interface ImportUnit {
  label: string;
  files: string[];
  bytes: number;
  sourceId: string;
  /** [from, to) the unit covers, when the source says (pmxt hour, Tardis day). */
  span?: [number, number];
  /** Rows the file states it holds (pmxt footer), for --dry-run. */
  rows?: number;
  lines(ctx: UnitContext): AsyncIterable<string>;
}

export interface ImportPlan {
  format: ImportFormat;
  units: ImportUnit[];
  /** Spans of the range no file covers: `source_missing`. */
  missing: [number, number][];
  /** The gaps as a unit of their own (capture lines only). */
  gaps: ImportUnit | null;
  /** Files that could not be planned (not readable, wrong kind): reported, the rest goes on. */
  problems: ImportProblem[];
}

/** Which files of a directory an import takes (a README or checksum file next to the data is not input). */
const DIRECTORY_FILES: Record<ImportFormat, (name: string) => boolean> = {
  frames: (n) => /\.(jsonl|ndjson|json|txt|log)(\.gz|\.zst)?$/.test(n),
  recorder: (n) => /\.jsonl(\.gz|\.zst)?$/.test(n),
  pmxt: (n) => n.endsWith('.parquet'),
  tardis: (n) => /\.csv(\.gz|\.zst)?$/.test(n),
};

export interface PlanOptions {
  from?: number;
  to?: number;
}

/** Bytes of each end hashed into a source id: the head tells contents apart, a Parquet footer describes the whole file. */
const FINGERPRINT_BYTES = 64 * 1024;

async function fingerprint(path: string): Promise<string> {
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

export async function planImport(format: ImportFormat, inputs: readonly string[], opts: PlanOptions = {}): Promise<ImportPlan> {
  const files = await expandInputs(inputs, DIRECTORY_FILES[format]);
  const problems: ImportProblem[] = [];
  const units: ImportUnit[] = [];
  const inRange = (t: number) => (opts.from === undefined || t >= opts.from) && (opts.to === undefined || t < opts.to);
  if (format === 'recorder') {
    // The recorder's archive holds its own capture records: its lines pass as they are, as `ingest replay` passes them.
    for (const path of files) {
      const { size } = await stat(path);
      units.push({ label: path, files: [path], bytes: size, sourceId: await frameFileSourceId(path), lines: (ctx) => plainLines(path, ctx.onBytes) });
    }
    return { format, units, missing: [], gaps: null, problems };
  }
  if (format === 'frames') {
    for (const path of files) {
      const sourceId = `${format}-${await fingerprint(path)}`;
      const { size } = await stat(path);
      units.push({ label: path, files: [path], bytes: size, sourceId, lines: (ctx) => frameLines(path, sourceId, ctx.onBytes) });
    }
    return { format, units, missing: [], gaps: null, problems };
  }
  if (format === 'pmxt') {
    for (const path of files) {
      const hour = pmxtHour(path);
      if (hour !== null && !inRange(hour)) continue;
      let pmxt: Awaited<ReturnType<typeof openPmxt>>;
      try {
        pmxt = await openPmxt(path);
      } catch (err) {
        problems.push({ file: path, where: '', message: (err as Error).message });
        continue;
      }
      if (hour === null)
        problems.push({ file: path, where: '', message: 'not named polymarket_orderbook_YYYY-MM-DDTHH.parquet: imported without coverage records' });
      const sourceId = `pmxt-${await fingerprint(path)}`;
      const { size } = await stat(path);
      const span: [number, number] | undefined = hour === null ? undefined : [hour, hour + HOUR];
      units.push({
        label: `${basename(path)} (pmxt v${pmxt.version}, ${pmxt.rows} rows in ${pmxt.rowGroups} row groups)`,
        files: [path],
        bytes: size,
        sourceId,
        span,
        rows: pmxt.rows,
        async *lines(ctx) {
          const seen = new Set<string>();
          let rows = 0;
          for await (const line of pmxtLines(path, pmxt, ctx.report, (a) => seen.add(a), ctx.assets)) {
            if ((++rows & 4095) === 0) ctx.onBytes((rows / pmxt.rows) * size);
            yield line;
          }
          ctx.onBytes(size);
          if (span) yield* spanLines(`pmxt-${new Date(span[0]).toISOString().slice(0, 13)}`, span[0], span[1], seen);
        },
      });
    }
    return withGaps(format, units, problems, HOUR, opts);
  }
  // tardis: files of one day and symbol form a unit.
  const groups = new Map<string, { path: string; kind: TardisKind; day: number }[]>();
  for (const path of files) {
    const name = tardisName(path);
    if (!name) {
      problems.push({
        file: path,
        where: '',
        message: 'not named {exchange}_{incremental_book_L2|trades}_{YYYY-MM-DD}_{symbol}.csv[.gz] (tardis-dev download name)',
      });
      continue;
    }
    if (!inRange(name.day)) continue;
    const list = groups.get(name.key) ?? [];
    if (list.some((f) => f.kind === name.kind)) {
      problems.push({ file: path, where: '', message: `a second ${name.kind} file for ${name.key}: skipped` });
      continue;
    }
    list.push({ path, kind: name.kind, day: name.day });
    groups.set(name.key, list);
  }
  for (const [key, list] of groups) {
    const prints = await Promise.all(list.map((f) => fingerprint(f.path)));
    const sizes = await Promise.all(list.map(async (f) => (await stat(f.path)).size));
    const bytes = sizes.reduce((a, b) => a + b, 0);
    const sourceId = `tardis-${createHash('sha256').update(prints.join()).digest('hex').slice(0, 16)}`;
    const day = list[0].day;
    units.push({
      label: `${key} (${list.map((f) => f.kind).join(' + ')})`,
      files: list.map((f) => f.path),
      bytes,
      sourceId,
      span: [day, day + DAY],
      async *lines(ctx) {
        const seen = new Set<string>();
        for await (const line of tardisLines(list, ctx.marketOf, ctx.report, (a) => seen.add(a), ctx.assets)) yield line;
        ctx.onBytes(bytes);
        yield* spanLines(`tardis-${key}`, day, day + DAY, seen);
      },
    });
  }
  return withGaps(format, units, problems, DAY, opts);
}

/** Hours (days) of the range without a file: the range is --from/--to, else first to last file. */
function withGaps(format: ImportFormat, units: ImportUnit[], problems: ImportProblem[], step: number, opts: PlanOptions): ImportPlan {
  const starts = units.flatMap((u) => (u.span ? [u.span[0]] : []));
  if (starts.length === 0) return { format, units, missing: [], gaps: null, problems };
  const floor = (t: number) => Math.floor(t / step) * step;
  const from = opts.from === undefined ? Math.min(...starts) : floor(opts.from);
  const to = opts.to === undefined ? Math.max(...starts) + step : floor(opts.to + step - 1);
  const missing = missingSpans(starts, from, to, step);
  if (missing.length === 0) return { format, units, missing, gaps: null, problems };
  const sourceId = `${format}-gaps-${createHash('sha256').update(JSON.stringify(missing)).digest('hex').slice(0, 16)}`;
  const gaps: ImportUnit = {
    label: `${missing.length} missing span${missing.length > 1 ? 's' : ''}`,
    files: [],
    bytes: 0,
    sourceId,
    async *lines() {
      for (const [a, b] of missing) yield* missingLines(`${format}-missing-${new Date(a).toISOString().slice(0, 13)}`, a, b);
    },
  };
  return { format, units, missing, gaps, problems };
}
