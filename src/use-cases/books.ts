import { z } from '@hono/zod-openapi';
import { type BookState, quoteOf } from '../book/index.js';
import { SEMANTICS } from '../http/data-semantics.js';
import { datetimeText } from '../http/datetime.js';

/**
 * A book at an instant as every door answers it (docs/API.md §4): the schemas and `data` of
 * `/v1/orderbook`, `/v1/price` and `/v1/execution-price`, which the MCP tools answer too.
 */

export const LevelSchema = z.object({ price: z.number(), size: z.number() }).openapi('BookLevel');

export const BookSchema = z
  .object({
    market: z.string(),
    asset_id: z.string(),
    timestamp: z.number().int().openapi({ description: 'Unix ms of the last event applied' }),
    datetime: z.string().openapi({ description: SEMANTICS.zones, example: '2025-12-23 09:19:06.487' }),
    best_bid: z.number().openapi({ description: '0 when there are no bids' }),
    best_ask: z.number().openapi({ description: '1 when there are no asks' }),
    bids: z.array(LevelSchema).openapi({ description: 'Price descending' }),
    asks: z.array(LevelSchema).openapi({ description: 'Price ascending' }),
  })
  .openapi('OrderBook');

export const PriceSchema = z
  .object({
    asset_id: z.string(),
    timestamp: z.number().int(),
    datetime: z.string(),
    best_bid: z.number(),
    best_ask: z.number(),
    midpoint: z.number(),
    spread: z.number(),
  })
  .openapi('Price');

export const ExecutionSchema = z
  .object({
    side: z.enum(['BUY', 'SELL']),
    requested_amount: z.number(),
    filled_amount: z.number(),
    average_price: z.number().nullable(),
    best_price: z.number().nullable(),
    slippage: z.number().nullable().openapi({ description: '|average_price − best_price|, a cost, never negative' }),
    slippage_bps: z.number().nullable(),
    fully_filled: z.boolean(),
    fills: z.array(LevelSchema).openapi({ description: 'The first 10 levels used' }),
  })
  .openapi('ExecutionPrice');

/** The 404 message of a book that does not exist at `at` (undefined = latest). */
export const bookMissing = (assetId: string, at: number | undefined) =>
  at === undefined ? `No order book for asset ${assetId}.` : `No order book for asset ${assetId} at or before ${at}.`;

/** `/v1/orderbook` `data` (docs/API.md §4) of a state: at most `depth` levels per side, best first. */
export function bookData(assetId: string, { market, timestamp, book }: BookState, depth: number) {
  return {
    market,
    asset_id: assetId,
    timestamp,
    datetime: datetimeText(timestamp),
    best_bid: book.bestBid(),
    best_ask: book.bestAsk(),
    bids: book.levels('bid', depth),
    asks: book.levels('ask', depth),
  };
}

/** `/v1/price` `data` (docs/API.md §4) of a state: the top of its book. */
export function priceData(assetId: string, { timestamp, book }: BookState) {
  return { asset_id: assetId, timestamp, datetime: datetimeText(timestamp), ...quoteOf(book) };
}
