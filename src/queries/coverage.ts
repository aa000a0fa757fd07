import type { Engine } from '../clickhouse/engine.js';
import { DAY_MS, type DayCondition, dateText, dayCoverage, utcDay } from '../coverage/days.js';
import { type AssetRecord, clip, type GapReason, type Reconnect, type RunRecord, type Segment, timeline } from '../coverage/timeline.js';
import { MAX_TIME_MS } from './orderbook.js';

/**
 * /v1/coverage and the coverage of /v1/markets (docs/TIME-MACHINE.md §4), from the capture records, the
 * drift checks and the ticks_1d rollup: nothing here reads `ticks`.
 */

// Times leave as `ms`: an alias named `t` would replace the column `t` in WHERE and ORDER BY.

/** Every run record before `to` (two per recorder run: few rows, and the earliest start matters). */
const RUNS_SQL = `SELECT toUnixTimestamp64Milli(t) AS ms, seq, run, toString(kind) AS kind
FROM capture_events
WHERE asset_id = '' AND t < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
ORDER BY t, seq`;

/**
 * The assets' records before `to`, from the start of the run active at `from` on: runs are
 * sequential (see timeline), so nothing older bears on [from, to). Before any run, max() is 1970.
 */
const RECORDS_SQL = `SELECT asset_id, toUnixTimestamp64Milli(t) AS ms, seq, run, socket, toString(kind) AS kind
FROM capture_events
WHERE asset_id IN {assets:Array(String)}
  AND t >= (SELECT max(t) FROM capture_events
            WHERE asset_id = '' AND kind IN ('start', 'source_missing') AND t <= fromUnixTimestamp64Milli({from:Int64}, 'UTC'))
  AND t < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
ORDER BY asset_id, t, seq`;

/** The assets that have any capture record at all. */
const RECORDED_SQL = `SELECT asset_id FROM capture_events WHERE asset_id IN {assets:Array(String)} LIMIT 1 BY asset_id`;

const DRIFT_DAYS_SQL = `SELECT asset_id, intDiv(toUnixTimestamp64Milli(t), ${DAY_MS}) * ${DAY_MS} AS day, count() AS drifted
FROM book_checks
WHERE asset_id IN {assets:Array(String)} AND verdict = 'drifted'
  AND t >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND t < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
GROUP BY asset_id, day`;

const BOOKS_SQL = `SELECT count() AS exchange, countIf(verdict = 'verified') AS verified, countIf(verdict = 'drifted') AS drifted
FROM book_checks
WHERE asset_id = {asset:String}
  AND t >= fromUnixTimestamp64Milli({start:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({end:Int64}, 'UTC')`;

const DRIFT_SQL = `SELECT toUnixTimestamp64Milli(t) AS ms, levels_differing
FROM book_checks
WHERE asset_id = {asset:String} AND verdict = 'drifted'
  AND t >= fromUnixTimestamp64Milli({start:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({end:Int64}, 'UTC')
ORDER BY t, seq
LIMIT 100`;

/** The formats `npm run import` enters in its ledger (src/ingest/import/plan.ts FORMATS). */
type ImportFormat = 'frames' | 'recorder' | 'pmxt' | 'pmxt-kalshi' | 'tardis';

/** The imports (docs/INGEST.md §6.5) that stored events of the asset in the range, one per unit, runs summed. */
const IMPORTS_SQL = `SELECT toString(format) AS format, unit, toUnixTimestamp64Milli(span_from) AS from_ms, toUnixTimestamp64Milli(span_to) AS to_ms,
  sum(events) AS events, toUnixTimestamp64Milli(max(at)) AS at_ms
FROM import_ledger_assets
WHERE asset_id = {asset:String}
  AND span_to > fromUnixTimestamp64Milli({start:Int64}, 'UTC') AND span_from <= fromUnixTimestamp64Milli({end:Int64}, 'UTC')
GROUP BY format, unit, span_from, span_to
ORDER BY span_from, unit
LIMIT 100`;

const TICKS_DAYS_SQL = `SELECT toString(day) AS date, sum(ticks) AS ticks
FROM ticks_1d
WHERE asset_id = {asset:String} AND day >= {first:Date} AND day <= {last:Date}
GROUP BY day`;

type Timed<T extends { t: number }> = Omit<T, 't'> & { ms: number };

interface AssetTimeline {
  segments: Segment[];
  reconnects: Reconnect[];
  /** Drifted books per UTC day (00:00 UTC ms). */
  drifted: Map<number, number>;
}

/** Timelines of several assets over [from, to), with their drifted books per day: four reads in all. */
async function loadTimelines(engine: Engine, assets: string[], from: number, to: number, signal?: AbortSignal): Promise<Map<string, AssetTimeline>> {
  const params = { assets, from, to };
  const [runs, records, recorded, drift] = await Promise.all([
    engine.rows<Timed<RunRecord>>(RUNS_SQL, { params, signal }),
    engine.rows<Timed<AssetRecord> & { asset_id: string }>(RECORDS_SQL, { params, signal }),
    engine.rows<{ asset_id: string }>(RECORDED_SQL, { params, signal }),
    engine.rows<{ asset_id: string; day: number; drifted: number }>(DRIFT_DAYS_SQL, { params, signal }),
  ]);
  const withRecords = new Set(recorded.map((r) => r.asset_id));
  const runRecords = runs.map(({ ms, ...r }) => ({ ...r, t: Number(ms), seq: Number(r.seq) }));
  const recordsOf = new Map<string, AssetRecord[]>();
  for (const { ms, ...r } of records) {
    const record = { ...r, t: Number(ms), seq: Number(r.seq) };
    const list = recordsOf.get(r.asset_id);
    if (list) list.push(record);
    else recordsOf.set(r.asset_id, [record]);
  }
  const byAsset = new Map<string, AssetTimeline>();
  for (const asset of assets) {
    byAsset.set(asset, { ...timeline(runRecords, recordsOf.get(asset) ?? [], withRecords.has(asset), from, to), drifted: new Map() });
  }
  for (const d of drift) byAsset.get(d.asset_id)?.drifted.set(Number(d.day), Number(d.drifted));
  return byAsset;
}

export interface CoverageQuery {
  asset_id: string;
  start: number;
  end: number;
}

export interface Coverage {
  asset_id: string;
  start: number;
  end: number;
  captured: { from: number; to: number }[];
  gaps: { from: number; to: number; reason: GapReason }[];
  reconnects: Reconnect[];
  books: { exchange: number; verified: number; drifted: number };
  drift: { t: number; levels_differing: number }[];
  days: { date: string; condition: DayCondition; ticks: number; gap_ms: number }[];
  imports: { format: ImportFormat; unit: string; from: number; to: number; events: number; imported_at: number }[];
}

/**
 * The coverage of one asset. Intervals are `from` ≤ t < `to`, clipped to [start, min(end, now)):
 * what has not happened yet is neither captured nor a gap. `days` lists every UTC day the range
 * touches up to today, each judged over the whole day (up to now); `books` and `drift` count the
 * exchange books with start ≤ t ≤ end.
 */
export async function coverageReport(engine: Engine, q: CoverageQuery, now: number, signal?: AbortSignal): Promise<Coverage> {
  const until = Math.min(q.end, now);
  // A range that starts after now touches no day yet: its days are judged from today (and then left
  // out by dayCoverage, whose first day lies after its last), never from a date the engine cannot hold.
  const firstDay = utcDay(Math.min(q.start, until + DAY_MS));
  const lastDay = utcDay(until);
  const windowTo = Math.max(firstDay, Math.min(lastDay + DAY_MS, now));
  const params = {
    asset: q.asset_id,
    start: Math.min(q.start, MAX_TIME_MS),
    end: Math.min(q.end, MAX_TIME_MS),
    first: dateText(firstDay),
    last: dateText(lastDay),
  };
  const [timelines, [books], drift, ticks, imports] = await Promise.all([
    loadTimelines(engine, [q.asset_id], firstDay, windowTo, signal),
    engine.rows<Coverage['books']>(BOOKS_SQL, { params, signal }),
    engine.rows<{ ms: number; levels_differing: number }>(DRIFT_SQL, { params, signal }),
    engine.rows<{ date: string; ticks: number }>(TICKS_DAYS_SQL, { params, signal }),
    engine.rows<{ format: ImportFormat; unit: string; from_ms: number; to_ms: number; events: number; at_ms: number }>(IMPORTS_SQL, { params, signal }),
  ]);
  const { segments, reconnects, drifted } = timelines.get(q.asset_id)!;
  const inRange = clip(segments, q.start, until);
  const ticksOn = new Map(ticks.map((d) => [d.date, Number(d.ticks)]));
  return {
    asset_id: q.asset_id,
    start: q.start,
    end: q.end,
    captured: inRange.filter((s) => s.state === 'captured').map(({ from, to }) => ({ from, to })),
    gaps: inRange.flatMap(({ from, to, state }) => (state === 'captured' ? [] : [{ from, to, reason: state }])),
    reconnects: reconnects.filter((r) => r.t >= q.start && r.t <= q.end),
    books: { exchange: Number(books.exchange), verified: Number(books.verified), drifted: Number(books.drifted) },
    drift: drift.map((d) => ({ t: Number(d.ms), levels_differing: Number(d.levels_differing) })),
    days: dayCoverage(segments, firstDay, lastDay, now, drifted).map((d) => ({
      date: dateText(d.day),
      condition: d.condition,
      ticks: ticksOn.get(dateText(d.day)) ?? 0,
      gap_ms: d.gap_ms,
    })),
    imports: imports.map((i) => ({
      format: i.format,
      unit: i.unit,
      from: Number(i.from_ms),
      to: Number(i.to_ms),
      events: Number(i.events),
      imported_at: Number(i.at_ms),
    })),
  };
}

export type ConditionCounts = Partial<Record<DayCondition, number>>;

/**
 * How many of each asset's last 7 UTC days (the day of its `lastSeen` and the 6 before, none after
 * now) had each condition; conditions that no day had are left out.
 */
export async function recentConditions(
  engine: Engine,
  assets: { asset_id: string; lastSeen: number }[],
  now: number,
  signal?: AbortSignal,
): Promise<Map<string, ConditionCounts>> {
  const out = new Map<string, ConditionCounts>();
  if (assets.length === 0) return out;
  const windows = assets.map((a) => ({ asset_id: a.asset_id, last: utcDay(Math.min(a.lastSeen, now)) }));
  const from = Math.min(...windows.map((w) => w.last)) - 6 * DAY_MS;
  const to = Math.min(Math.max(...windows.map((w) => w.last)) + DAY_MS, now);
  const ids = [...new Set(assets.map((a) => a.asset_id))];
  const timelines = new Map<string, AssetTimeline>();
  // A server engine sends bound parameters in the URL: 200 token ids (~80 characters each) stay well
  // inside what an HTTP front end accepts, as in the writer's market lookups.
  for (let i = 0; i < ids.length; i += 200) {
    for (const [id, timeline] of await loadTimelines(engine, ids.slice(i, i + 200), from, to, signal)) timelines.set(id, timeline);
  }
  for (const w of windows) {
    const { segments, drifted } = timelines.get(w.asset_id)!;
    const counts: ConditionCounts = {};
    for (const d of dayCoverage(segments, w.last - 6 * DAY_MS, w.last, now, drifted)) counts[d.condition] = (counts[d.condition] ?? 0) + 1;
    out.set(w.asset_id, counts);
  }
  return out;
}
