import type { Engine } from '../clickhouse/engine.js';
import type { FeeFields, ProtocolVersion } from '../clickhouse/rows.js';
import type { MarketMetadata } from '../instruments/instrument.js';
import { MAX_TIME_MS } from './orderbook.js';

/**
 * What the Polymarket-compatible endpoints and /v1/instruments read besides books (which come through
 * a BookReader) and history (instruments.ts): the tokens' metadata from `markets`, and the last trade
 * at or before an instant.
 */

const FEE_COLUMNS = ['fees_enabled', 'taker_base_fee', 'maker_base_fee', 'fee_rate', 'fee_exponent', 'fee_taker_only', 'fee_rebate_rate'] as const;

/**
 * `markets` is small; FINAL gives each token's newest metadata version, and the protocol version Gamma
 * stated beside it (market_protocols, '' when none is stored).
 */
const METADATA_SQL = `
SELECT m.asset_id AS asset_id, market, outcome, question, min_order_size, tick_size, neg_risk, ${FEE_COLUMNS.join(', ')},
  p.protocol_version AS protocol_version
FROM (SELECT * FROM markets FINAL WHERE asset_id IN {ids:Array(String)}) AS m
LEFT JOIN (SELECT asset_id, protocol_version FROM market_protocols FINAL WHERE asset_id IN {ids:Array(String)}) AS p ON p.asset_id = m.asset_id
SETTINGS join_use_nulls = 0`;

/**
 * Ids per query: the bound parameter travels in the URL, which servers limit (Node's HTTP parser at
 * 16 KB of request head); 100 real token ids (77 digits, URL-encoded with quotes) take ~9 KB.
 */
const IDS_PER_QUERY = 100;

type MetadataRow = Omit<MarketMetadata, 'fees' | 'protocol_version'> & { asset_id: string; protocol_version: ProtocolVersion | '' } & {
  [K in (typeof FEE_COLUMNS)[number]]: FeeFields[K] | null;
};

/** The metadata of each token that has any (tokens without are absent). */
export async function marketMetadata(engine: Engine, assetIds: readonly string[], signal?: AbortSignal): Promise<Map<string, MarketMetadata>> {
  const ids = [...new Set(assetIds)];
  const out = new Map<string, MarketMetadata>();
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
    const rows = await engine.rows<MetadataRow>(METADATA_SQL, { params: { ids: ids.slice(i, i + IDS_PER_QUERY) }, signal });
    for (const row of rows) {
      const fees: FeeFields = {};
      for (const k of FEE_COLUMNS) if (row[k] !== null) (fees as Record<string, unknown>)[k] = row[k];
      const { market, outcome, question, min_order_size, tick_size, neg_risk } = row;
      const protocol_version = row.protocol_version === '' ? null : row.protocol_version;
      out.set(row.asset_id, { market, outcome, question, min_order_size, tick_size, neg_risk, fees, protocol_version });
    }
  }
  return out;
}

/**
 * The newest `last_trade_price` tick of the asset with t ≤ {at}: a reverse read of the asset's key
 * range that stops at the first trade. `book_side` holds the taker side ('' for rows ingested
 * before the ingest kept it).
 */
const LAST_TRADE_SQL = `
SELECT toUnixTimestamp64Milli(t) AS timestamp, price, toString(book_side) AS side
FROM ticks
WHERE asset_id = {asset_id:String} AND event = 'last_trade_price' AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
ORDER BY t DESC, seq DESC
LIMIT 1`;

export interface LastTrade {
  timestamp: number;
  price: number;
  side: 'BUY' | 'SELL' | '';
}

/** The last trade of an asset at or before `at` (Unix ms; null = latest), or null when none. */
export async function lastTradeAt(engine: Engine, assetId: string, at: number | null, signal?: AbortSignal): Promise<LastTrade | null> {
  const rows = await engine.rows<LastTrade>(LAST_TRADE_SQL, { params: { asset_id: assetId, at: Math.min(at ?? MAX_TIME_MS, MAX_TIME_MS) }, signal });
  return rows[0] ?? null;
}

/**
 * The tokens of a market (condition id) as metadata and stored ticks name them, at most a hundred (a
 * market has a handful of outcomes; the bound only caps what bad metadata could claim).
 */
const MARKET_TOKENS_SQL = `
SELECT asset_id FROM (
  SELECT asset_id FROM markets FINAL WHERE market = {market:String}
  UNION DISTINCT
  SELECT asset_id FROM asset_stats WHERE market = {market:String}
)
ORDER BY asset_id
LIMIT 100`;

export async function tokensOfMarket(engine: Engine, market: string, signal?: AbortSignal): Promise<string[]> {
  return (await engine.rows<{ asset_id: string }>(MARKET_TOKENS_SQL, { params: { market }, signal })).map((r) => r.asset_id);
}
