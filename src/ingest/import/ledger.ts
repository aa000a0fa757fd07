import type { Engine } from '../../clickhouse/engine.js';

/**
 * The import ledger (clickhouse/040_import_ledger.sql, docs/INGEST.md §6.5): what each import of a unit
 * stored, so that no sequence of runs stores a row twice. A run writes a `started` entry before it
 * writes anything of a unit and a `complete` one after; the rows an entry covers are those of its file
 * version (`digest`) before `sourceRows`, of its assets ([] = all).
 *
 * Before a unit is imported its earlier entries are resolved into jobs (resolveUnit):
 * - the same file (same digest): its rows are all there for the entry's assets;
 * - a file that grew (another digest, and the first `sourceRows` rows of this file hash as that file's
 *   did): rows before `sourceRows` are there for the entry's assets, the rest is new;
 * - a file that changed otherwise: its assets are not imported again (a problem names them);
 * - an import that started and never completed (killed): its selection is run again first, exactly as it
 *   was (the same batches, which the engine drops where they were stored), then the new one.
 */

export interface LedgerEntry {
  run: string;
  unit: string;
  format: string;
  files: string[];
  bytes: number;
  digest: string;
  sourceRows: number;
  /** UInt64 as decimal text. */
  rowsHash: string;
  /** [] = every asset. */
  assets: string[];
  spanFrom: number;
  spanTo: number;
  events: number;
  storedRows: number;
  status: 'started' | 'complete';
  at: number;
}

export async function readLedger(engine: Engine, unit: string): Promise<LedgerEntry[]> {
  const rows = await engine.rows<Record<string, unknown>>(
    `SELECT run, unit, format, files, bytes, digest, source_rows, toString(rows_hash) AS rows_hash, assets, toUnixTimestamp64Milli(span_from) AS span_from,
       toUnixTimestamp64Milli(span_to) AS span_to, events, stored_rows, toString(status) AS status, toUnixTimestamp64Milli(at) AS at
     FROM import_ledger WHERE unit = {unit:String} ORDER BY at, status`,
    { params: { unit } },
  );
  return rows.map((r) => ({
    run: String(r.run),
    unit: String(r.unit),
    format: String(r.format),
    files: r.files as string[],
    bytes: Number(r.bytes),
    digest: String(r.digest),
    sourceRows: Number(r.source_rows),
    rowsHash: String(r.rows_hash),
    assets: r.assets as string[],
    spanFrom: Number(r.span_from),
    spanTo: Number(r.span_to),
    events: Number(r.events),
    storedRows: Number(r.stored_rows),
    status: r.status as LedgerEntry['status'],
    at: Number(r.at),
  }));
}

export async function writeLedger(engine: Engine, e: LedgerEntry): Promise<void> {
  const row = {
    run: e.run,
    unit: e.unit,
    format: e.format,
    files: e.files,
    bytes: e.bytes,
    digest: e.digest,
    source_rows: e.sourceRows,
    rows_hash: e.rowsHash,
    assets: e.assets,
    span_from: e.spanFrom,
    span_to: e.spanTo,
    events: e.events,
    stored_rows: e.storedRows,
    status: e.status,
    at: e.at,
  };
  // A bookkeeping row of its own: never deduplicated against another (two runs may write equal ones).
  await engine.insertJsonEachRow('import_ledger', JSON.stringify(row), { insert_deduplicate: 0 });
}

/** An asset's events an import stored, and the span they lie in (a unit's, or their own first to last + 1 ms). */
export interface AssetEvents {
  events: number;
  from: number;
  to: number;
}

/** Per asset, the events a complete import stored (what /v1/coverage counts). */
export async function writeLedgerAssets(engine: Engine, e: LedgerEntry, events: ReadonlyMap<string, AssetEvents>): Promise<void> {
  const lines: string[] = [];
  for (const [asset, a] of events) {
    if (a.events === 0) continue;
    lines.push(
      `{"asset_id":${JSON.stringify(asset)},"span_from":${a.from},"span_to":${a.to},"unit":${JSON.stringify(e.unit)},` +
        `"format":${JSON.stringify(e.format)},"run":${JSON.stringify(e.run)},"events":${a.events},"at":${e.at}}`,
    );
  }
  for (let i = 0; i < lines.length; i += 10_000) {
    await engine.insertJsonEachRow('import_ledger_assets', lines.slice(i, i + 10_000).join('\n'), { insert_deduplicate: 0 });
  }
}

/** A bound past every row (an entry of the very same file covers all of its rows). */
export const ALL_ROWS = Number.MAX_SAFE_INTEGER;

/** Rows of a file an entry stored: before `bound`, of `assets` (all when `all`). */
export interface Covered {
  all: boolean;
  assets: ReadonlySet<string>;
  bound: number;
}

/** One pass over the unit's file: the assets it writes (all when undefined) and what is there already. */
export interface Job {
  /** Requested assets; undefined = all. */
  assets?: ReadonlySet<string>;
  covered: Covered[];
  /** Assets not imported (their rows are of another version of the file); `all`: the whole unit. */
  conflicts: { all: boolean; assets: ReadonlySet<string> };
  /** The entry this job completes again (a run that was killed), if any. */
  resumes?: LedgerEntry;
}

export interface UnitResolution {
  jobs: Job[];
  problems: string[];
  /** Nothing left to import for the assets asked for. */
  done: boolean;
  /** An earlier import stored part of this unit already (its coverage records are there). */
  seen: boolean;
}

/**
 * The jobs that import `requested` assets (undefined: all) of a unit whose file has `digest` and `rows`
 * rows, given its ledger entries. `prefixHash(bound)`: the hash of this file's rows before `bound`, asked
 * only for entries of another version.
 */
export async function resolveUnit(
  entries: LedgerEntry[],
  file: { digest: string; rows: number },
  requested: ReadonlySet<string> | undefined,
  prefixHash: (bound: number) => Promise<string>,
): Promise<UnitResolution> {
  const problems: string[] = [];
  const completedRuns = new Set(entries.filter((e) => e.status === 'complete').map((e) => e.run));
  const complete = entries.filter((e) => e.status === 'complete');
  const pending = entries.filter((e) => e.status === 'started' && !completedRuns.has(e.run));
  const valid = new Map<LedgerEntry, boolean>();
  for (const e of complete) {
    if (e.digest === file.digest) valid.set(e, true);
    else valid.set(e, e.sourceRows <= file.rows && (await prefixHash(e.sourceRows)) === e.rowsHash);
  }
  // A killed import is run again exactly as it ran: only on the very file it read.
  for (const e of pending) valid.set(e, e.digest === file.digest);
  const coveredBy = (before: number, extra: LedgerEntry[] = []) => {
    const covered: Covered[] = [];
    const conflicts = { all: false, assets: new Set<string>() };
    for (const e of [...complete.filter((c) => c.at < before), ...extra]) {
      // The same file: every row of it (however many this one has); a grown one: the rows it had.
      if (valid.get(e)) covered.push({ all: e.assets.length === 0, assets: new Set(e.assets), bound: e.digest === file.digest ? ALL_ROWS : e.sourceRows });
      else if (e.assets.length === 0) conflicts.all = true;
      else for (const a of e.assets) conflicts.assets.add(a);
    }
    return { covered, conflicts };
  };
  const jobs: Job[] = [];
  const resumed: LedgerEntry[] = [];
  for (const p of pending) {
    if (!valid.get(p)) {
      problems.push(
        `an import of ${p.assets.length === 0 ? 'all its assets' : `${p.assets.length} asset(s)`} was interrupted (run ${p.run}) ` +
          'and the file has changed since: those rows may be stored in part',
      );
      continue;
    }
    const { covered, conflicts } = coveredBy(p.at);
    // The same file rows (the killed run's version may be a prefix of this one): exactly its selection again.
    jobs.push({ assets: p.assets.length === 0 ? undefined : new Set(p.assets), covered, conflicts, resumes: p });
    resumed.push(p);
  }
  const { covered, conflicts } = coveredBy(Infinity, resumed);
  for (const p of pending) if (!valid.get(p)) for (const a of p.assets.length === 0 ? [] : p.assets) conflicts.assets.add(a);
  if (pending.some((p) => !valid.get(p) && p.assets.length === 0)) conflicts.all = true;
  const changed = [...complete].filter((e) => !valid.get(e));
  if (changed.length > 0) {
    const all = changed.some((e) => e.assets.length === 0);
    problems.push(
      `changed since it was imported on ${new Date(changed[0].at).toISOString()} (not only rows appended): ` +
        `${all ? 'it is' : `${conflicts.assets.size} of its assets are`} not imported again (import it into an empty store to replace the earlier version)`,
    );
  }
  const job: Job = { assets: requested, covered, conflicts };
  const done = conflicts.all || coversAll(job, file.rows);
  if (!done) jobs.push(job);
  return { jobs, problems, done: jobs.length === 0, seen: complete.length > 0 || pending.length > 0 };
}

/** Whether everything a job asks for is covered already (so the file need not be read). */
function coversAll(job: Job, rows: number): boolean {
  const full = job.covered.filter((c) => c.bound >= rows || c.bound === ALL_ROWS);
  if (full.some((c) => c.all)) return true;
  if (!job.assets) return false;
  const have = new Set(full.flatMap((c) => [...c.assets]));
  return [...job.assets].every((a) => have.has(a) || job.conflicts.assets.has(a));
}

/** The first row of `asset` a job writes (rows before it are there already); Infinity: none. */
export function firstRowToWrite(job: Job, asset: string): number {
  if (job.conflicts.all || job.conflicts.assets.has(asset)) return Infinity;
  if (job.assets && !job.assets.has(asset)) return Infinity;
  let from = 0;
  for (const c of job.covered) if (c.all || c.assets.has(asset)) from = Math.max(from, c.bound);
  return from;
}

/**
 * The same rule as SQL over the events' `asset_id` and `n`, with its parameters (prefixed `prefix`):
 * true for the rows a job writes.
 */
export function jobFilterSql(job: Job, prefix: string): { sql: string; params: Record<string, unknown> } {
  if (job.conflicts.all) return { sql: '0', params: {} };
  const params: Record<string, unknown> = {};
  const terms: string[] = [];
  if (job.assets) {
    params[`${prefix}_assets`] = [...job.assets];
    terms.push(`asset_id IN {${prefix}_assets:Array(String)}`);
  }
  if (job.conflicts.assets.size > 0) {
    params[`${prefix}_conflicts`] = [...job.conflicts.assets];
    terms.push(`asset_id NOT IN {${prefix}_conflicts:Array(String)}`);
  }
  const bounds = job.covered.filter((c) => c.bound > 0);
  if (bounds.length > 0) {
    const parts = bounds.map((c, i) => {
      if (c.all) return String(c.bound);
      params[`${prefix}_c${i}`] = [...c.assets];
      return `if(asset_id IN {${prefix}_c${i}:Array(String)}, ${c.bound}, 0)`;
    });
    terms.push(`n >= greatest(0, ${parts.join(', ')})`);
  }
  return { sql: terms.length > 0 ? terms.join(' AND ') : '1', params };
}

/** `npm run import -- --status`: every unit's latest complete import, and imports that did not complete. */
export async function ledgerStatus(engine: Engine): Promise<string> {
  const rows = await engine.rows<{
    unit: string;
    format: string;
    files: string[];
    bytes: number;
    digest: string;
    source_rows: number;
    assets: number;
    span_from: number;
    span_to: number;
    events: number;
    last_at: number;
    imports: number;
    unfinished: number;
  }>(
    `SELECT * FROM (
     SELECT unit, argMax(format, at) AS format, argMax(files, at) AS files, argMax(bytes, at) AS bytes, argMax(digest, at) AS digest,
       argMax(source_rows, at) AS source_rows, argMax(length(assets), at) AS assets, toUnixTimestamp64Milli(argMax(span_from, at)) AS span_from,
       toUnixTimestamp64Milli(argMax(span_to, at)) AS span_to, sum(events) AS events, toUnixTimestamp64Milli(max(at)) AS last_at,
       uniqExact(run) AS imports, 0 AS unfinished
     FROM import_ledger WHERE status = 'complete' GROUP BY unit
     UNION ALL
     SELECT unit, any(format), any(files), any(bytes), any(digest), any(source_rows), any(length(assets)), 0, 0, 0,
       toUnixTimestamp64Milli(max(at)) AS last_at, 0,
       uniqExact(run) AS unfinished
     FROM import_ledger WHERE status = 'started' AND run NOT IN (SELECT run FROM import_ledger WHERE status = 'complete') GROUP BY unit)
     ORDER BY unit`,
  );
  if (rows.length === 0) return 'The ledger is empty: nothing was imported into this store.';
  const lines = ['unit | file(s) | bytes | rows | span | events stored | imports | last'];
  for (const r of rows) {
    const span = Number(r.span_to) > 0 ? `${new Date(Number(r.span_from)).toISOString()} → ${new Date(Number(r.span_to)).toISOString()}` : '-';
    const files = r.files.map((f) => f.split('/').at(-1)).join(' + ');
    if (Number(r.unfinished) > 0) {
      lines.push(
        `${r.unit} | ${files} | ${r.bytes} | ${r.source_rows} | - | - | ${r.unfinished} not completed (rerun it) | ` +
          new Date(Number(r.last_at)).toISOString(),
      );
      continue;
    }
    const assets = Number(r.assets) > 0 ? ` (latest: --assets, ${r.assets})` : '';
    lines.push(
      `${r.unit} | ${files} | ${r.bytes} | ${r.source_rows} | ${span} | ${r.events} | ${r.imports}${assets} | ${new Date(Number(r.last_at)).toISOString()}`,
    );
  }
  return lines.join('\n');
}
