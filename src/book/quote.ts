import type { OrderBook } from './order-book.js';

/**
 * Prices are decimals of a few places, and float arithmetic on them leaves noise (0.083 − 0.082 =
 * 0.0010000000000000009). Prices derived by arithmetic (midpoint, spread) are rounded to 10 decimal
 * places: far below any tick size, and they read as the decimals they are.
 */
export const PRICE_DECIMALS = 10;

export function roundPrice(x: number): number {
  return Math.round(x * 10 ** PRICE_DECIMALS) / 10 ** PRICE_DECIMALS;
}

/** Top of book (docs/API.md `/v1/price`): best prices with the empty-side rule, midpoint and spread. */
export interface Quote {
  best_bid: number;
  best_ask: number;
  midpoint: number;
  spread: number;
}

export const midpoint = (bestBid: number, bestAsk: number) => roundPrice((bestBid + bestAsk) / 2);
export const spread = (bestBid: number, bestAsk: number) => roundPrice(bestAsk - bestBid);

export function quoteOf(book: OrderBook): Quote {
  const best_bid = book.bestBid();
  const best_ask = book.bestAsk();
  return { best_bid, best_ask, midpoint: midpoint(best_bid, best_ask), spread: spread(best_bid, best_ask) };
}
