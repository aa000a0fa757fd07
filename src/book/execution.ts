import type { Level, OrderBook } from './order-book.js';

/** `/v1/execution-price` `data` (docs/API.md): a market order walked through the whole book. */
export interface Execution {
  side: 'BUY' | 'SELL';
  requested_amount: number;
  filled_amount: number;
  average_price: number | null;
  best_price: number | null;
  slippage: number | null;
  slippage_bps: number | null;
  fully_filled: boolean;
  fills: Level[];
}

/** Fills reported: the first levels used. */
const MAX_FILLS = 10;

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * A market order of `amount` shares: BUY eats asks from the lowest, SELL eats bids from the highest,
 * level by level. The level that completes the order is found by comparing cumulative depth with the
 * amount, so an amount equal to the visible depth fills fully and `filled_amount` is then exactly the
 * amount requested. Prices are rounded to 6 decimals and bps to 2, as the contract says.
 */
export function executeMarketOrder(book: OrderBook, side: 'BUY' | 'SELL', amount: number): Execution {
  const levels = book.levels(side === 'BUY' ? 'ask' : 'bid');
  if (levels.length === 0) {
    return {
      side,
      requested_amount: amount,
      filled_amount: 0,
      average_price: null,
      best_price: null,
      slippage: null,
      slippage_bps: null,
      fully_filled: false,
      fills: [],
    };
  }
  const fills: Level[] = [];
  let filled = 0;
  let cost = 0;
  let fully = false;
  for (const { price, size } of levels) {
    const completes = filled + size >= amount;
    const take = completes ? amount - filled : size;
    if (fills.length < MAX_FILLS) fills.push({ price: round(price, 6), size: round(take, 6) });
    cost += price * take;
    if (completes) {
      filled = amount;
      fully = true;
      break;
    }
    filled += size;
  }
  const average = cost / filled;
  const best = levels[0].price;
  const slippage = Math.abs(average - best);
  return {
    side,
    requested_amount: amount,
    filled_amount: fully ? amount : round(filled, 6),
    average_price: round(average, 6),
    best_price: round(best, 6),
    slippage: round(slippage, 6),
    slippage_bps: best > 0 ? round((slippage / best) * 1e4, 2) : 0,
    fully_filled: fully,
    fills,
  };
}
