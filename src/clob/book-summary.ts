import { createHash } from 'node:crypto';
import type { BookState, Level } from '../book/index.js';

/**
 * Polymarket's CLOB read API answers (docs/TIME-MACHINE.md §2), built from a reconstructed book: shapes,
 * value types and key order as Polymarket's `clob-openapi.yaml` and its clients have them.
 */

/** A token's trading rules in force at an instant (src/instruments/instrument.ts tradingRulesAt). */
export interface TradingRules {
  min_order_size: number;
  tick_size: number;
  neg_risk: boolean;
}

/**
 * What Polymarket answers for a market that sets none of them: a 0.01 tick (its standard tick;
 * 0.001 and finer only where a market says so), a 5-share minimum order (Gamma's `orderMinSize`
 * of standard markets) and the plain (not neg-risk) exchange.
 */
export const POLYMARKET_DEFAULT_RULES: TradingRules = { min_order_size: 5, tick_size: 0.01, neg_risk: false };

/** A number as Polymarket writes it in a string: shortest decimal form, never exponent notation. */
export function decimalText(x: number): string {
  const text = String(x);
  if (!text.includes('e')) return text;
  // Below 1e-6 JavaScript switches to exponents; 20 places hold any price or size the feed sends.
  return x.toFixed(20).replace(/\.?0+$/, '');
}

/** `GET /book` (OrderBookSummary): keys in the order the exchange hashes them. */
export interface BookSummary {
  market: string;
  asset_id: string;
  timestamp: string;
  hash: string;
  bids: { price: string; size: string }[];
  asks: { price: string; size: string }[];
  min_order_size: string;
  tick_size: string;
  neg_risk: boolean;
  last_trade_price: string;
}

const levelTexts = (levels: Level[]) => levels.map(({ price, size }) => ({ price: decimalText(price), size: decimalText(size) }));

/**
 * The summary of a book at an instant, with the trading rules and last trade price in force then.
 * Levels as Polymarket lists them: bids ascending and asks descending (the best level last).
 * `timestamp` is the time of the last event applied (as in `/v1/orderbook`); `last_trade_price` is
 * "" when no trade came before. `hash` is what the exchange
 * computes: SHA-1 (hex) of the compact JSON of the summary with `hash` set to "" (checked against a
 * real `/book` answer, and what the clients' `getOrderBookHash` recompute).
 */
export function bookSummary(assetId: string, state: BookState, rules: TradingRules, lastTradePrice: number | null): BookSummary {
  const { min_order_size, tick_size, neg_risk } = rules;
  const summary: BookSummary = {
    market: state.market,
    asset_id: assetId,
    timestamp: String(state.timestamp),
    hash: '',
    bids: levelTexts(state.book.levels('bid').reverse()),
    asks: levelTexts(state.book.levels('ask').reverse()),
    min_order_size: decimalText(min_order_size),
    tick_size: decimalText(tick_size),
    neg_risk,
    last_trade_price: lastTradePrice === null ? '' : decimalText(lastTradePrice),
  };
  summary.hash = createHash('sha1').update(JSON.stringify(summary)).digest('hex');
  return summary;
}
