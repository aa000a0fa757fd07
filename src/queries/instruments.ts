import type { Engine } from '../clickhouse/engine.js';
import type { FeeFields } from '../clickhouse/rows.js';
import { type ListingEvent, type ListingHistory, newer, type Resolution, type Stated, type TradingHistory } from '../instruments/history.js';
import { MAX_TIME_MS } from './orderbook.js';

/**
 * What stored history says about an instrument at an instant (docs/TIME-MACHINE.md §5): the newest
 * tick size, trade price and neg-risk flag at or before it, and the newest new_market and
 * market_resolved (plus the first resolution after it). Each part is a reverse read of one asset's
 * key range that stops at its first match; the assembly with metadata is src/instruments/instrument.ts.
 */

const AT = "fromUnixTimestamp64Milli({at:Int64}, 'UTC')";
const NEWEST = 'ORDER BY t DESC, seq DESC LIMIT 1';

/**
 * One row per source that has a value: (what, ms, seq, value). Every branch reads the asset's key range
 * backwards from {at} and stops at its first match (`is_checkpoint = 0`: the ingester's own books state
 * no tick size), except `next_change`: the first tick_size_change after {at}, whose old tick is the tick
 * in force at {at} when nothing at or before {at} stated one.
 */
const TRADING_SQL = `
SELECT * FROM (SELECT 'event_tick' AS what, toUnixTimestamp64Milli(t) AS ms, seq, assumeNotNull(new_tick_size) AS value FROM market_events
  WHERE asset_id = {asset_id:String} AND event IN ('tick_size_change', 'new_market') AND new_tick_size IS NOT NULL AND t <= ${AT} ${NEWEST})
UNION ALL
SELECT * FROM (SELECT 'next_change' AS what, toUnixTimestamp64Milli(t) AS ms, seq, assumeNotNull(old_tick_size) AS value FROM market_events
  WHERE asset_id = {asset_id:String} AND event = 'tick_size_change' AND old_tick_size IS NOT NULL AND t > ${AT} ORDER BY t, seq LIMIT 1)
UNION ALL
SELECT * FROM (SELECT 'book_tick' AS what, toUnixTimestamp64Milli(t) AS ms, seq, assumeNotNull(tick_size) AS value FROM book_snapshots
  WHERE asset_id = {asset_id:String} AND is_checkpoint = 0 AND tick_size IS NOT NULL AND t <= ${AT} ${NEWEST})
UNION ALL
SELECT * FROM (SELECT 'trade' AS what, toUnixTimestamp64Milli(t) AS ms, seq, price AS value FROM ticks
  WHERE asset_id = {asset_id:String} AND event = 'last_trade_price' AND t <= ${AT} ${NEWEST})
UNION ALL
SELECT * FROM (SELECT 'book_trade' AS what, toUnixTimestamp64Milli(t) AS ms, seq, assumeNotNull(last_trade_price) AS value FROM book_snapshots
  WHERE asset_id = {asset_id:String} AND is_checkpoint = 0 AND last_trade_price IS NOT NULL AND t <= ${AT} ${NEWEST})
UNION ALL
SELECT * FROM (SELECT 'neg_risk' AS what, toUnixTimestamp64Milli(t) AS ms, seq, toFloat64(assumeNotNull(neg_risk)) AS value FROM market_events
  WHERE asset_id = {asset_id:String} AND event = 'new_market' AND neg_risk IS NOT NULL AND t <= ${AT} ${NEWEST})`;

type Row = { what: string; ms: number; seq: number; value: number };

/** The asset's tick size, last trade price and neg-risk flag as of `at` (Unix ms; null = latest). */
export async function tradingHistoryAt(engine: Engine, assetId: string, at: number | null, signal?: AbortSignal): Promise<TradingHistory> {
  const params = { asset_id: assetId, at: Math.min(at ?? MAX_TIME_MS, MAX_TIME_MS) };
  const rows = await engine.rows<Row>(TRADING_SQL, { params, signal });
  const of = (what: string): Stated<number> | null => {
    const r = rows.find((x) => x.what === what);
    return r ? { t: Number(r.ms), seq: Number(r.seq), value: Number(r.value) } : null;
  };
  const negRisk = of('neg_risk');
  return {
    tickSize: newer(of('event_tick'), of('book_tick')) ?? of('next_change'),
    lastTrade: newer(of('trade'), of('book_trade')),
    negRisk: negRisk && { ...negRisk, value: negRisk.value === 1 },
  };
}

const EVENT_COLUMNS = `toString(event) AS kind, toUnixTimestamp64Milli(t) AS ms, toString(market) AS market, outcome,
  JSONExtractString(raw, 'question') AS question,
  winning_asset_id, winning_outcome, fees_enabled, taker_base_fee, maker_base_fee, fee_rate, fee_exponent, fee_taker_only, fee_rebate_rate`;

/** The newest new_market and market_resolved at or before {at}, and the first market_resolved after it. */
const LISTING_SQL = `
SELECT * FROM (SELECT ${EVENT_COLUMNS}, 0 AS later FROM market_events
  WHERE asset_id = {asset_id:String} AND event IN ('new_market', 'market_resolved') AND t <= ${AT}
  ORDER BY t DESC, seq DESC LIMIT 1 BY event)
UNION ALL
SELECT * FROM (SELECT ${EVENT_COLUMNS}, 1 AS later FROM market_events
  WHERE asset_id = {asset_id:String} AND event = 'market_resolved' AND t > ${AT}
  ORDER BY t, seq LIMIT 1)`;

/** The asset's market as the stored ticks name it (asset_stats: one small row per asset, no scan of ticks). */
const MARKET_SQL = 'SELECT any(market) AS market FROM asset_stats WHERE asset_id = {asset_id:String}';

type EventRow = {
  kind: string;
  ms: number;
  market: string;
  outcome: string;
  question: string;
  winning_asset_id: string;
  winning_outcome: string;
  later: number;
} & { [K in keyof FeeFields]-?: FeeFields[K] | null };

const FEE_KEYS = ['fees_enabled', 'taker_base_fee', 'maker_base_fee', 'fee_rate', 'fee_exponent', 'fee_taker_only', 'fee_rebate_rate'] as const;

function listingOf(r: EventRow): ListingEvent {
  const fees: FeeFields = {};
  for (const k of FEE_KEYS) if (r[k] !== null) (fees as Record<string, unknown>)[k] = r[k];
  return { t: Number(r.ms), market: r.market, outcome: r.outcome, question: r.question, fees };
}

/** The listing (new_market) and resolution history of an asset around `at` (Unix ms). */
export async function listingHistoryAt(engine: Engine, assetId: string, at: number, signal?: AbortSignal): Promise<ListingHistory> {
  const params = { asset_id: assetId, at: Math.min(at, MAX_TIME_MS) };
  const [rows, markets] = await Promise.all([
    engine.rows<EventRow>(LISTING_SQL, { params, signal }),
    engine.rows<{ market: string }>(MARKET_SQL, { params, signal }),
  ]);
  const resolution = (r: EventRow | undefined): Resolution | null =>
    r ? { t: Number(r.ms), winning_asset_id: r.winning_asset_id, winning_outcome: r.winning_outcome } : null;
  const listed = rows.find((r) => r.kind === 'new_market' && !Number(r.later));
  return {
    market: markets[0]?.market ?? '',
    listing: listed ? listingOf(listed) : null,
    resolved: resolution(rows.find((r) => r.kind === 'market_resolved' && !Number(r.later))),
    resolvedLater: resolution(rows.find((r) => Number(r.later))),
  };
}

/**
 * The newest tick_size_change, new_market and market_resolved of each asset (the set index skips
 * granules of best_bid_ask only), and the newest tick its exchange books stated (book_tick_sizes).
 */
const CURRENT_EVENTS_SQL = `
SELECT asset_id, ${EVENT_COLUMNS}, seq, new_tick_size, neg_risk
FROM market_events
WHERE asset_id IN {ids:Array(String)} AND event IN ('tick_size_change', 'new_market', 'market_resolved')
ORDER BY asset_id, t DESC, seq DESC
LIMIT 1 BY asset_id, event`;

const CURRENT_BOOK_TICKS_SQL = `
SELECT asset_id, toUnixTimestamp64Milli(max(latest).1) AS ms, max(latest).2 AS seq, max(latest).3 AS value
FROM book_tick_sizes
WHERE asset_id IN {ids:Array(String)}
GROUP BY asset_id`;

/** Ids per query: the bound array travels in the URL of a server engine (see queries/clob.ts). */
const IDS_PER_QUERY = 100;

/**
 * What the history says of each asset now (the newest of everything): tick size and neg-risk, listing
 * and resolution, as tradingHistoryAt and listingHistoryAt would give them at the end of time, for a
 * page of assets at once (/v1/markets). `market` and the last trade are not read (the listing has them).
 */
export async function currentHistories(
  engine: Engine,
  assetIds: readonly string[],
  signal?: AbortSignal,
): Promise<Map<string, { trading: TradingHistory; listing: ListingHistory }>> {
  const out = new Map<string, { trading: TradingHistory; listing: ListingHistory }>();
  for (const id of assetIds) {
    out.set(id, { trading: { tickSize: null, lastTrade: null, negRisk: null }, listing: { market: '', listing: null, resolved: null, resolvedLater: null } });
  }
  for (let i = 0; i < assetIds.length; i += IDS_PER_QUERY) {
    const params = { ids: assetIds.slice(i, i + IDS_PER_QUERY) };
    const [events, books] = await Promise.all([
      engine.rows<EventRow & { asset_id: string; seq: number; new_tick_size: number | null; neg_risk: boolean | null }>(CURRENT_EVENTS_SQL, { params, signal }),
      engine.rows<Row & { asset_id: string }>(CURRENT_BOOK_TICKS_SQL, { params, signal }),
    ]);
    for (const b of books) {
      const h = out.get(b.asset_id)!.trading;
      h.tickSize = newer(h.tickSize, { t: Number(b.ms), seq: Number(b.seq), value: Number(b.value) });
    }
    for (const e of events) {
      const { trading, listing } = out.get(e.asset_id)!;
      const at = { t: Number(e.ms), seq: Number(e.seq) };
      if (e.new_tick_size !== null) trading.tickSize = newer(trading.tickSize, { ...at, value: e.new_tick_size });
      if (e.kind === 'market_resolved') listing.resolved = { t: at.t, winning_asset_id: e.winning_asset_id, winning_outcome: e.winning_outcome };
      if (e.kind === 'new_market') {
        if (e.neg_risk !== null) trading.negRisk = { ...at, value: e.neg_risk };
        listing.listing = listingOf(e);
      }
    }
  }
  return out;
}
