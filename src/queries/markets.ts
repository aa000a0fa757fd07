import type { Engine } from '../clickhouse/engine.js';
import { type Instrument, instrumentAt } from '../instruments/instrument.js';
import { marketMetadata } from './clob.js';
import { type ConditionCounts, recentConditions } from './coverage.js';
import { currentHistories } from './instruments.js';

/**
 * Market listings and totals from the rollups (asset_stats, activity_1m) and the small `markets`
 * metadata table: no request scans `ticks` beyond two partial minutes.
 */
/** The instrument fields an entry carries as of now (docs/TIME-MACHINE.md §5); asset, market, question and as_of are the entry's own. */
export type EntryInstrument = Omit<Instrument, 'asset_id' | 'market' | 'question' | 'as_of'>;

export interface MarketEntry extends EntryInstrument {
  market: string;
  asset_id: string;
  side: string;
  first_seen: string;
  last_seen: string;
  total_ticks: number;
  question?: string;
  slug?: string;
  /** Conditions of the entry's last 7 UTC days (docs/TIME-MACHINE.md §4), e.g. {"available": 6, "degraded": 1}. */
  coverage: ConditionCounts;
}

/** asset_stats merged to one row per asset, with its metadata (FINAL: newest version per token). */
const LISTED = `SELECT s.asset_id AS asset_id, s.market AS market, s.first_seen AS first_seen, s.last_seen AS last_seen,
  toUnixTimestamp64Milli(s.last_seen) AS last_seen_ms,
  s.total_ticks AS total_ticks, m.outcome AS outcome, m.question AS question, m.slug AS slug
FROM (
  SELECT asset_id, any(market) AS market, min(first_seen) AS first_seen, max(last_seen) AS last_seen, sum(total_ticks) AS total_ticks
  FROM asset_stats
  GROUP BY asset_id
) AS s
LEFT JOIN (SELECT asset_id, outcome, question, slug FROM markets FINAL) AS m ON m.asset_id = s.asset_id
WHERE s.total_ticks > 0
  AND ({search:String} = ''
    OR positionCaseInsensitiveUTF8(s.market, {search:String}) > 0
    OR positionCaseInsensitiveUTF8(m.question, {search:String}) > 0)`;

export async function listMarkets(
  engine: Engine,
  q: { search: string; limit: number; offset: number },
  now: number,
  signal?: AbortSignal,
): Promise<{ entries: MarketEntry[]; total: number }> {
  const params = { search: q.search, limit: q.limit, offset: q.offset };
  // The total rides on the page (a window over all matches); only a page past the end needs its own count.
  const rows = await engine.rows<Omit<MarketEntry, 'coverage'> & { question: string; slug: string; total: number; last_seen_ms: number }>(
    `SELECT market, asset_id,
  -- Ticks carry the outcome label upper-cased, and UNKNOWN while no metadata is known (docs/INGEST.md §2).
  if(outcome != '', upperUTF8(outcome), 'UNKNOWN') AS side,
  toString(first_seen) AS first_seen, toString(last_seen) AS last_seen, last_seen_ms, total_ticks, question, slug,
  count() OVER () AS total
FROM (${LISTED})
ORDER BY total_ticks DESC, asset_id ASC
LIMIT {limit:UInt32} OFFSET {offset:UInt64}`,
    { params, signal },
  );
  const total = rows.length
    ? Number(rows[0].total)
    : Number((await engine.rows<{ total: number }>(`SELECT count() AS total FROM (${LISTED})`, { params, signal }))[0]?.total ?? 0);
  const ids = rows.map((r) => r.asset_id);
  const [coverage, histories, metadata] = await Promise.all([
    recentConditions(
      engine,
      rows.map((r) => ({ asset_id: r.asset_id, lastSeen: Number(r.last_seen_ms) })),
      now,
      signal,
    ),
    currentHistories(engine, ids, signal),
    marketMetadata(engine, ids, signal),
  ]);
  const entries = rows.map(({ question, slug, total: _total, last_seen_ms: _lastSeen, ...entry }) => {
    const h = histories.get(entry.asset_id)!;
    // Its ticks name the market (history), so instrumentAt knows the asset: never null.
    h.listing.market = entry.market;
    const {
      asset_id: _a,
      market: _m,
      question: _q,
      as_of: _at,
      ...instrument
    } = instrumentAt(entry.asset_id, now, h.trading, h.listing, metadata.get(entry.asset_id))!;
    return {
      ...entry,
      total_ticks: Number(entry.total_ticks),
      ...(question ? { question } : {}),
      ...(slug ? { slug } : {}),
      coverage: coverage.get(entry.asset_id) ?? {},
      ...instrument,
    };
  });
  return { entries, total };
}

export interface MarketStats {
  total_markets: number;
  total_assets: number;
  total_ticks: number;
  total_snapshots: number;
  first_timestamp: number | null;
  last_timestamp: number | null;
  ticks_last_24h: number;
  events: { price_change: number; book: number; last_trade_price: number };
}

const MINUTE = 60_000;
const DAY = 86_400_000;

/**
 * Totals from asset_stats; exchange snapshots = `book` ticks (every `book` event is stored both as a
 * tick and as one snapshot, checkpoints are not ticks). ticks_last_24h = [now − 24 h, now]: whole
 * minutes from activity_1m, the partial minutes at both edges counted on ticks through the `t`
 * minmax index.
 */
export async function marketStats(engine: Engine, now: number, signal?: AbortSignal): Promise<MarketStats> {
  const from = now - DAY;
  const fullFrom = Math.ceil(from / MINUTE) * MINUTE;
  const fullTo = Math.floor((now + 1) / MINUTE) * MINUTE;
  const [row] = await engine.rows<Record<string, number | null>>(
    `SELECT
  uniqExactIf(market, total_ticks > 0) AS total_markets,
  countIf(total_ticks > 0) AS total_assets,
  sum(total_ticks) AS all_ticks,
  sum(book_ticks) AS book,
  sum(price_change_ticks) AS price_change,
  sum(last_trade_ticks) AS last_trade_price,
  if(all_ticks = 0, NULL, toUnixTimestamp64Milli(min(first_seen))) AS first_timestamp,
  if(all_ticks = 0, NULL, toUnixTimestamp64Milli(max(last_seen))) AS last_timestamp,
  (SELECT sum(ticks) FROM activity_1m
    WHERE bucket >= toDateTime(intDiv({full_from:Int64}, 1000), 'UTC') AND bucket < toDateTime(intDiv({full_to:Int64}, 1000), 'UTC'))
  + (SELECT count() FROM ticks
    WHERE (t >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND t < fromUnixTimestamp64Milli({full_from:Int64}, 'UTC'))
       OR (t >= fromUnixTimestamp64Milli({full_to:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({now:Int64}, 'UTC'))) AS ticks_last_24h
FROM (
  SELECT asset_id, any(market) AS market, min(first_seen) AS first_seen, max(last_seen) AS last_seen, sum(total_ticks) AS total_ticks,
    sum(book_ticks) AS book_ticks, sum(price_change_ticks) AS price_change_ticks, sum(last_trade_ticks) AS last_trade_ticks
  FROM asset_stats
  GROUP BY asset_id
)`,
    { params: { from, full_from: fullFrom, full_to: fullTo, now }, signal },
  );
  const n = (v: number | null | undefined) => Number(v ?? 0);
  return {
    total_markets: n(row.total_markets),
    total_assets: n(row.total_assets),
    total_ticks: n(row.all_ticks),
    total_snapshots: n(row.book),
    first_timestamp: row.first_timestamp === null ? null : n(row.first_timestamp),
    last_timestamp: row.last_timestamp === null ? null : n(row.last_timestamp),
    ticks_last_24h: n(row.ticks_last_24h),
    events: { price_change: n(row.price_change), book: n(row.book), last_trade_price: n(row.last_trade_price) },
  };
}
