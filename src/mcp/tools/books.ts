import { z } from 'zod';
import { booksIn } from '../../auth/book-in-window.js';
import { executeMarketOrder } from '../../book/index.js';
import { BookSchema, bookData, bookMissing, ExecutionSchema, PriceSchema, priceData } from '../../use-cases/books.js';
import { assetId, instant, intIn, oneOf, shares, toMs } from '../inputs.js';
import { defineTool } from '../tool.js';

/** Book tools: `/v1/orderbook`, `/v1/price` and `/v1/execution-price` (docs/API.md §4), through the app's BookReader. */

const AT = 'The instant: Unix ms or ISO 8601; the book after every event with t ≤ it. Default: the latest book';
const UNITS = 'Prices are probabilities in [0, 1] (USDC per share), sizes are shares.';

export const getOrderBook = defineTool({
  name: 'get_order_book',
  title: 'Order book at an instant',
  description:
    'The reconstructed L2 order book of one outcome token at any millisecond, as GET /v1/orderbook answers it: bids price descending, asks ascending, ' +
    `\`depth\` levels per side (default 20); best_bid 0 / best_ask 1 when a side is empty; timestamp = the last event applied. ${UNITS} ` +
    'Bounded: at most 100 levels per side (~7 KB).',
  input: z.strictObject({
    asset_id: assetId(),
    timestamp: instant(AT).optional(),
    depth: intIn(1, 100, 'Levels per side, best first (default 20)').optional(),
  }),
  output: BookSchema,
  async run(args, deps, call) {
    const at = toMs('timestamp', args.timestamp);
    const state = await booksIn(call.window, deps.books, at ?? null, call.signal).get(args.asset_id, bookMissing(args.asset_id, at));
    return bookData(args.asset_id, state, args.depth ?? 20);
  },
});

export const getPrice = defineTool({
  name: 'get_price',
  title: 'Price, midpoint and spread at an instant',
  description:
    'Top of the reconstructed book of one outcome token at any millisecond, as GET /v1/price answers it: best_bid, best_ask, midpoint = (bid + ask) / 2, ' +
    `spread = ask − bid, and the time of the last event applied. ${UNITS} Bounded: one quote (~200 bytes).`,
  input: z.strictObject({ asset_id: assetId(), timestamp: instant(AT).optional() }),
  output: PriceSchema,
  async run(args, deps, call) {
    const at = toMs('timestamp', args.timestamp);
    const state = await booksIn(call.window, deps.books, at ?? null, call.signal).get(args.asset_id, bookMissing(args.asset_id, at));
    return priceData(args.asset_id, state);
  },
});

export const getExecutionPrice = defineTool({
  name: 'get_execution_price',
  title: 'Execution price of a market order',
  description:
    'Walks the whole reconstructed book at an instant with a market order, as GET /v1/execution-price answers it: BUY eats asks ascending, SELL eats bids ' +
    'descending; average_price (VWAP of the fills), best_price, slippage (≥ 0) and slippage_bps, filled_amount, fully_filled, and the first 10 levels used. ' +
    `Prices rounded to 6 decimals, bps to 2. ${UNITS} Bounded: at most 10 fills (~700 bytes).`,
  input: z.strictObject({
    asset_id: assetId(),
    side: oneOf(['BUY', 'SELL'] as const, 'BUY takes the asks, SELL takes the bids'),
    amount: shares('Shares to fill, at least 0.000001 (fractions allowed)'),
    timestamp: instant(AT).optional(),
  }),
  output: ExecutionSchema,
  async run(args, deps, call) {
    const at = toMs('timestamp', args.timestamp);
    const state = await booksIn(call.window, deps.books, at ?? null, call.signal).get(args.asset_id, bookMissing(args.asset_id, at));
    return executeMarketOrder(state.book, args.side, args.amount);
  },
});
