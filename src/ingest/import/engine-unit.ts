import { randomUUID } from 'node:crypto';
import type { Engine, QueryParams } from '../../clickhouse/engine.js';
import type { CaptureRow } from '../../clickhouse/rows.js';
import { totalRows } from '../frame-files.js';
import { BatchWriter } from '../writer.js';
import { type BookState, type BookStates, freshState } from './book-states.js';
import { type FoldRow, FoldRowDecoder, foldColumns, RowsHash } from './events.js';
import { BookPass, type FoldAsset } from './fold.js';
import { firstRowToWrite, type Job, jobFilterSql, type LedgerEntry, readLedger, resolveUnit, writeLedger, writeLedgerAssets } from './ledger.js';
import type { ImportProblem } from './problems.js';

/**
 * One unit of an engine import (a pmxt hour, a Tardis day and symbol; docs/INGEST.md §6): the engine
 * reads the file into events (events.ts); the ticks of changes that state their best bid and ask go
 * straight from the file into `ticks` in one INSERT … SELECT (`bulk`), while the book pass (fold.ts)
 * reads every event as RowBinary and writes the rest through the batch writer. Both run at once.
 *
 * Idempotence (docs/INGEST.md §6.5): the ledger says which rows are there already (ledger.ts); the
 * insert reads the file in order on one thread, so a rerun after a kill makes the same blocks, which
 * the engine drops where they were stored (as it drops the writer's batches by their tokens).
 */

/** seq = seqBase + n; the last values of a unit's range go to its capture records (coverage). */
export const UNIT_SEQ_SPAN = 2 ** 32;
const CAPTURE_SEQ = { source_missing: -5, start: -4, subscribe: -3, open: -2, stop: -1 } as const;

/** Where and how a unit's events are read (pmxt.ts, tardis.ts). */
export interface OpenedSource {
  /** SQL of the events (events.ts columns). */
  events: string;
  /** SQL of the rows the engine inserts into ticks itself (events.ts bulkRowsSql), when the unit has them. */
  bulk?: string;
  params: QueryParams;
  /** SETTINGS for every query reading `events`. */
  settings: string;
  /** Where an unusable row is, for a problem (`row group g, row r`; `line n`), with the file it is in. */
  problems(): Promise<ImportProblem[]>;
  release(): Promise<void>;
}

export interface EngineUnit {
  format: 'pmxt' | 'pmxt-kalshi' | 'tardis';
  /** The ledger's key: the same for every version of the file (a pmxt hour, a Tardis day and symbol). */
  key: string;
  label: string;
  files: string[];
  bytes: number;
  digest: string;
  /** Rows in the source when known before reading (a Parquet footer), else 0. */
  rows: number;
  span?: [number, number];
  /** Run name of its capture records (coverage). */
  run: string;
  seqBase: number;
  /** Changes that state their best bid/ask go to ticks straight from the file (pmxt). */
  bulk: boolean;
  open(engine: Engine): Promise<OpenedSource>;
}

export interface EngineUnitContext {
  report: (p: ImportProblem) => void;
  assets?: ReadonlySet<string>;
  /** asset → outcome label (upper-cased) and market from --markets. */
  labels: ReadonlyMap<string, string>;
  marketOf: ReadonlyMap<string, string>;
  states: BookStates;
  writer: { batchRows?: number };
  /** Rows folded so far of the unit, of how many. */
  onRows: (done: number, total: number) => void;
}

export interface EngineUnitResult {
  /** Nothing was left to import: the ledger says it is all there. */
  skipped: boolean;
  events: number;
  rows: Record<string, number>;
}

/** Settings of the reads and inserts of a unit, each with its why. */
const READ = [
  // Parquet reader v3 reads row groups and columns ahead up to this much memory (its default is 4 GB).
  'input_format_parquet_memory_high_watermark = 134217728',
  // Text → Float64 as JavaScript's Number() reads it: correctly rounded.
  'precise_float_parsing = 1',
  // Conditions moved into the Parquet reader's PREWHERE lose the columns they are computed from
  // ("Not found column … in block", engine 26.7, INSERT … SELECT over a file): the filter stays a WHERE.
  'optimize_move_to_prewhere = 0',
];
/**
 * Rows in file order without a sort (ORDER BY n over 30 M rows sorted them all in memory): one thread,
 * and the Parquet reader keeping its row groups in order. The book pass checks the order it is given.
 */
const IN_ORDER = ['max_threads = 1', 'input_format_parquet_preserve_order = 1'];
const BULK = [
  ...READ,
  // One thread from file to insert: the same file gives the same blocks, which a rerun's insert drops.
  ...IN_ORDER,
  // The materialized views of ticks (book_events, candles, stats) run beside each other on the other core.
  'parallel_view_processing = 1',
  // Each view checks a block again by itself: after a kill between a block's part and its views' parts,
  // the rerun's duplicate block still fills the views it had not reached.
  'deduplicate_blocks_in_dependent_materialized_views = 1',
  // Each block's rollup rows are already one per key (041_candles_preaggregated.sql): nothing to collapse.
  'optimize_on_insert = 0',
  // Blocks of ~256k rows: large enough for few parts, small enough for a flat resident set.
  'min_insert_block_size_rows = 262144',
  'min_insert_block_size_bytes = 67108864',
  'max_insert_block_size = 262144',
];

const settingsOf = (items: string[], extra: string) => [...items, ...(extra ? [extra] : [])].join(', ');

/**
 * Engines from 25.x deduplicate an INSERT … SELECT only when they hold its SELECT stable, and a read of a
 * file is not one to them: a rerun after a kill would store the blocks stored before again (measured).
 * The read is stable (one thread, the file's order, checked by the book pass), so deduplication is asked
 * for; older servers (24.8) deduplicate INSERT … SELECT anyway and do not know the setting.
 */
const dedupSetting = new WeakMap<Engine, Promise<string[]>>();
function insertSelectDedup(engine: Engine): Promise<string[]> {
  let known = dedupSetting.get(engine);
  if (!known) {
    known = engine
      .rows<{ n: number }>(`SELECT count() AS n FROM system.settings WHERE name = 'deduplicate_insert_select'`)
      .then(([r]) => (Number(r.n) > 0 ? ["deduplicate_insert_select = 'enable_even_for_bad_queries'"] : []));
    dedupSetting.set(engine, known);
  }
  return known;
}

export async function importEngineUnit(engine: Engine, unit: EngineUnit, ctx: EngineUnitContext): Promise<EngineUnitResult> {
  const entries = await readLedger(engine, unit.key);
  let source: OpenedSource | undefined;
  const open = async () => (source ??= await unit.open(engine));
  try {
    const resolution = await resolveUnit(entries, { digest: unit.digest, rows: unit.rows }, ctx.assets, async (bound) => {
      const s = await open();
      const hash = new RowsHash();
      const assets = await assetMap(engine, s);
      await readRows(engine, s, assets.mixedMarkets, `n < ${Math.floor(bound)}`, (r) => hash.add(r));
      return hash.value;
    });
    for (const message of resolution.problems) ctx.report({ file: unit.files.join(' + '), where: '', message });
    const rows: Record<string, number> = {};
    if (resolution.done) return { skipped: true, events: 0, rows };
    const s = await open();
    // The asset map's read of the file runs beside the first job's bulk insert, not before it (runJob).
    const assets = assetMap(engine, s);
    assets.catch(() => {});
    // The run's own records (start, stop) are written by the unit's first import (a killed one's rerun writes the same again).
    const first = !entries.some((e) => e.status === 'complete');
    let events = 0;
    const initial = await ctx.states.at(unit.span?.[0] ?? -1);
    let states = initial;
    let skipped = false;
    for (const [i, job] of resolution.jobs.entries()) {
      // Several jobs (a killed import run again first) each fold the whole file from the same start.
      states = i === resolution.jobs.length - 1 ? initial : cloneStates(initial);
      const result = await runJob(engine, unit, s, job, assets, states, ctx, first && i === 0);
      events += result.events;
      skipped ||= result.skippedRows;
      for (const [table, n] of Object.entries(result.rows)) rows[table] = (rows[table] ?? 0) + n;
    }
    // Rows the book pass did not get had a problem: which, and where (a read of the file only then).
    if (skipped) for (const p of await s.problems()) ctx.report(p);
    if (unit.span) await ctx.states.save(unit.span[1], states, unfolded(await assets, resolution.jobs.at(-1)!));
    else ctx.states.reset();
    return { skipped: false, events, rows };
  } finally {
    await source?.release();
  }
}

interface AssetInfo {
  assetId: string;
  market: string;
  rows: number;
}

interface AssetMap {
  byKey: Map<number, AssetInfo>;
  mixedMarkets: boolean;
}

/** The unit's assets by key (events.ts `ak`), and whether one of them names several markets. */
async function assetMap(engine: Engine, s: OpenedSource): Promise<AssetMap> {
  // Only the asset and market columns are read (rows with a problem are counted too: the book pass skips them).
  // Aliases other than the columns' names: an alias `asset_id` would be what `ak` hashes.
  const rows = await engine.rows<{ ak: number; id: string; ids: number; mk: string; markets: number; rows: number }>(
    `SELECT bitShiftRight(cityHash64(asset_id), 11) AS ak, any(asset_id) AS id, uniqExact(asset_id) AS ids, any(market) AS mk,
       uniqExact(market) AS markets, count() AS rows
     FROM (${s.events}) GROUP BY ak SETTINGS ${settingsOf(READ, s.settings)}`,
    { params: s.params },
  );
  const clash = rows.find((r) => Number(r.ids) > 1);
  if (clash) throw new Error(`two asset ids share a 53-bit key (${clash.id}): this file cannot be imported`);
  return {
    byKey: new Map(rows.map((r) => [Number(r.ak), { assetId: r.id, market: r.mk, rows: Number(r.rows) }])),
    mixedMarkets: rows.some((r) => Number(r.markets) > 1),
  };
}

/** Assets of the unit whose state the job did not carry through it (not folded): their end state is unknown. */
function unfolded(assets: { byKey: Map<number, AssetInfo> }, job: Job): Set<number> {
  const out = new Set<number>();
  for (const [ak, a] of assets.byKey) if (firstRowToWrite(job, a.assetId) === Infinity) out.add(ak);
  return out;
}

/** The labels of the assets of the unit the job writes. */
function fileLabels(assets: AssetMap | undefined, job: Job, labels: ReadonlyMap<string, string>): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of assets?.byKey.values() ?? []) {
    const label = labels.get(a.assetId);
    if (label !== undefined && firstRowToWrite(job, a.assetId) !== Infinity) out.set(a.assetId, label);
  }
  return out;
}

function cloneStates(states: Map<number, BookState>): Map<number, BookState> {
  return new Map([...states].map(([ak, s]) => [ak, { ...s, book: s.book?.clone() ?? null }]));
}

async function runJob(
  engine: Engine,
  unit: EngineUnit,
  s: OpenedSource,
  job: Job,
  assetsRead: Promise<AssetMap>,
  states: Map<number, BookState>,
  ctx: EngineUnitContext,
  first: boolean,
): Promise<{ events: number; rows: Record<string, number>; skippedRows: boolean }> {
  const run = job.resumes?.run ?? randomUUID();
  const entry: LedgerEntry = {
    run,
    unit: unit.key,
    format: unit.format,
    files: unit.files,
    bytes: unit.bytes,
    digest: unit.digest,
    sourceRows: unit.rows,
    rowsHash: '0',
    assets: job.assets ? [...job.assets].sort() : [],
    spanFrom: unit.span?.[0] ?? 0,
    spanTo: unit.span?.[1] ?? 0,
    events: 0,
    storedRows: 0,
    status: 'started',
    at: job.resumes?.at ?? Date.now(),
  };
  if (!job.resumes) await writeLedger(engine, entry);
  // The writer's batches are named by the file version and what this job writes: a rerun of the same job
  // cuts the same batches under the same tokens.
  const filter = jobFilterSql(job, 'job');
  const writer = new BatchWriter(engine, { sourceId: `${unit.key}-${unit.digest}-${entry.assets.join(',')}`, batchRows: ctx.writer.batchRows });
  // The bulk insert is the longest part of a unit: it starts first, and the asset map (a read of the file
  // on the other core) is awaited after it started. A failed map (two assets sharing a key) waits for the
  // insert to end before it is thrown: what the insert stored is the file's own rows (a rerun adds none).
  // With --markets the insert waits for the map: it names the labels of the file's assets only (a
  // parameter of a bounded size, where the whole venue's labels are ~100,000).
  let assets = ctx.labels.size > 0 ? await assetsRead : undefined;
  const base = s.bulk ? await storedTicks(engine) : 0;
  const bulk = s.bulk ? bulkInsert(engine, unit, s, filter, fileLabels(assets, job, ctx.labels)) : Promise.resolve();
  // Nothing of the bulk insert is awaited before the book pass ends; its failure must not go unhandled meanwhile.
  bulk.catch(() => {});
  try {
    assets ??= await assetsRead;
  } catch (err) {
    await bulk.catch(() => {});
    throw err;
  }
  const folded = new Map<number, FoldAsset>();
  for (const [ak, a] of assets.byKey) {
    const from = firstRowToWrite(job, a.assetId);
    if (from === Infinity) continue;
    const market = unit.format === 'tardis' ? (ctx.marketOf.get(a.assetId) ?? '') : a.market;
    let state = states.get(ak);
    if (state) state.market = market;
    else states.set(ak, (state = freshState(a.assetId, market)));
    // A Kalshi market is one binary instrument whose book is its YES side (docs/KALSHI.md): its label is YES.
    const label = ctx.labels.get(a.assetId) ?? (unit.format === 'pmxt-kalshi' ? 'YES' : 'UNKNOWN');
    folded.set(ak, { assetId: a.assetId, market, label, from, state, written: 0 });
  }
  const pass = new BookPass(writer, folded, { seqBase: unit.seqBase, bulk: s.bulk !== undefined });
  const total = [...assets.byKey.values()].reduce((n, a) => n + a.rows, 0);
  // The unit's progress: rows both passes are done with (the insert's: the ticks it stored so far).
  const done = { fold: 0, bulk: s.bulk ? 0 : Infinity };
  const report = () => ctx.onRows(Math.min(done.fold, done.bulk), total);
  const polling = s.bulk ? pollStored(engine, base, bulk, (rows) => ((done.bulk = rows), report())) : Promise.resolve();
  try {
    await bookPass(engine, s, pass, writer, assets.mixedMarkets, (rows) => ((done.fold = rows), report()));
  } catch (err) {
    // What was sealed is stored; the partial rest is not (BatchWriter.settle), and the insert ends first.
    await Promise.allSettled([bulk, writer.settle(), polling]);
    throw err;
  }
  await bulk;
  await polling;
  done.bulk = Infinity;
  report();
  const bulkRows = pass.bulkWritten;
  // Coverage records name the assets of which no earlier import of the unit stored anything.
  const fresh = [...folded.values()].filter((a) => a.from === 0 && a.written > 0).map((a) => a.assetId);
  if (unit.span) captureRows(unit, fresh, first).forEach((r) => writer.capture(r));
  await writer.flush();
  const events = pass.written;
  const rows: Record<string, number> = { ...writer.stats.rows, ticks: writer.stats.rows.ticks + bulkRows };
  const complete: LedgerEntry = {
    ...entry,
    rowsHash: pass.hash.value,
    events,
    storedRows: totalRows(writer.stats) + bulkRows,
    status: 'complete',
    at: Date.now(),
  };
  await writeLedger(engine, complete);
  const span = { from: complete.spanFrom, to: complete.spanTo };
  await writeLedgerAssets(engine, complete, new Map([...folded.values()].map((a) => [a.assetId, { events: a.written, ...span }])));
  return { events, rows, skippedRows: pass.rows < total };
}

/** Every event as RowBinary through the book pass (the writer's back-pressure holds the read). */
async function bookPass(
  engine: Engine,
  s: OpenedSource,
  pass: BookPass,
  writer: BatchWriter,
  withMarket: boolean,
  onRows: (done: number) => void,
): Promise<void> {
  let rows = 0;
  await readRows(
    engine,
    s,
    withMarket,
    '1',
    (r) => pass.push(r),
    async () => {
      const wait = writer.ready();
      if (wait) await wait;
      if (pass.rows - rows >= 65_536) {
        rows = pass.rows;
        onRows(rows);
      }
    },
  );
  onRows(pass.rows);
}

/** The unit's good rows matching `where`, in file order, decoded from RowBinary; `each` per row, `between` per chunk. */
async function readRows(
  engine: Engine,
  s: OpenedSource,
  withMarket: boolean,
  where: string,
  each: (r: FoldRow) => void,
  between?: () => Promise<void>,
): Promise<void> {
  const decoder = new FoldRowDecoder(withMarket);
  const stream = engine.stream(
    `SELECT ${foldColumns(withMarket)} FROM (${s.events}) WHERE reason = '' AND ${where} SETTINGS ${settingsOf([...READ, ...IN_ORDER], s.settings)}`,
    'RowBinary',
    { params: s.params },
  );
  for await (const chunk of stream) {
    decoder.feed(chunk as Buffer);
    for (let r = decoder.read(); r !== undefined; r = decoder.read()) each(r);
    await between?.();
  }
  if (decoder.incomplete) throw new Error('the engine ended a read of the file in the middle of a row');
}

/** Rows in the active parts of `ticks`: what inserts have stored so far (merges keep the sum). */
async function storedTicks(engine: Engine): Promise<number> {
  const [r] = await engine.rows<{ n: string }>(
    `SELECT toString(sum(rows)) AS n FROM system.parts WHERE database = currentDatabase() AND table = 'ticks' AND active`,
  );
  return Number(r?.n ?? 0);
}

/**
 * The bulk insert's progress, every second until it settles: ticks stored since `base` (the engine
 * counts a statement's rows read and written with those of the views it fills, so its own counters
 * cannot say how far into the file it is).
 */
async function pollStored(engine: Engine, base: number, until: Promise<void>, each: (rows: number) => void): Promise<void> {
  let over = false;
  void until.then(
    () => (over = true),
    () => (over = true),
  );
  while (!over) {
    await Promise.race([until.catch(() => {}), new Promise((r) => setTimeout(r, 1000))]);
    if (over) return;
    const rows = await storedTicks(engine).catch(() => 0);
    if (!over && rows > base) each(rows - base);
  }
}

/** The ticks of changes that state their best bid/ask, from the file into `ticks`. */
async function bulkInsert(
  engine: Engine,
  unit: EngineUnit,
  s: OpenedSource,
  filter: { sql: string; params: QueryParams },
  labels: ReadonlyMap<string, string>,
): Promise<void> {
  // The labels of the file's assets (the transform leaves the others UNKNOWN, as the book pass does).
  const side = labels.size > 0 ? `transform(asset_id, {labels_assets:Array(String)}, {labels_sides:Array(String)}, 'UNKNOWN')` : `'UNKNOWN'`;
  const params: QueryParams = {
    ...s.params,
    ...filter.params,
    seq_base: unit.seqBase,
    labels_assets: [...labels.keys()],
    labels_sides: [...labels.values()],
  };
  await engine.command(
    `INSERT INTO ticks (asset_id, t, seq, event, side, best_bid, best_ask, price, size, book_side, market, local_t)
     SELECT asset_id, t, {seq_base:UInt64} + n, 'price_change', ${side}, best_bid, best_ask, price, size, side, market, local_t
     FROM (${s.bulk}) WHERE ${filter.sql}
     SETTINGS ${settingsOf([...BULK, ...(await insertSelectDedup(engine))], s.settings)}`,
    { params },
  );
}

/**
 * The unit's span as a recorder run of its own (docs/INGEST.md §6.4): start, each asset subscribed and
 * open at its start, stop at its end; `first`: no earlier import of the unit wrote the run's records.
 * seq values are the top of the unit's range: ordered among themselves, after the next unit's … and the
 * records of a `source_missing` gap at the same instant (a hole filled later reads as captured).
 */
function captureRows(unit: EngineUnit, assets: string[], first: boolean): CaptureRow[] {
  const [from, to] = unit.span!;
  const seq = (k: keyof typeof CAPTURE_SEQ) => unit.seqBase + UNIT_SEQ_SPAN + CAPTURE_SEQ[k];
  const rows: CaptureRow[] = [];
  if (first) rows.push({ asset_id: '', t: from, seq: seq('start'), run: unit.run, socket: 0, kind: 'start' });
  for (const asset_id of [...assets].sort()) {
    rows.push({ asset_id, t: from, seq: seq('subscribe'), run: unit.run, socket: 1, kind: 'subscribe' });
    rows.push({ asset_id, t: from, seq: seq('open'), run: unit.run, socket: 1, kind: 'open' });
  }
  if (first) rows.push({ asset_id: '', t: to, seq: seq('stop'), run: unit.run, socket: 0, kind: 'stop' });
  return rows;
}

/** The capture records of a span an archive lacks (a `source_missing` gap, docs/INGEST.md §6.4). */
export function missingRows(run: string, from: number, to: number, seqBase: number): CaptureRow[] {
  const seq = (k: keyof typeof CAPTURE_SEQ) => seqBase + UNIT_SEQ_SPAN + CAPTURE_SEQ[k];
  return [
    { asset_id: '', t: from, seq: seq('source_missing'), run, socket: 0, kind: 'source_missing' },
    { asset_id: '', t: to, seq: seq('stop'), run, socket: 0, kind: 'stop' },
  ];
}
