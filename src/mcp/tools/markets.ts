import { z } from 'zod';
import { booksIn } from '../../auth/book-in-window.js';
import { assertInWindow, endInWindow } from '../../auth/history-window.js';
import { notFound } from '../../http/errors.js';
import { lastTradeAt } from '../../queries/clob.js';
import { listMarkets, marketOfAsset } from '../../queries/markets.js';
import { PriceSchema, priceData } from '../../use-cases/books.js';
import { InstrumentSchema, readInstrument } from '../../use-cases/instruments.js';
import { MarketEntrySchema } from '../../use-cases/markets.js';
import { assetId, instant, intIn, text, toMs } from '../inputs.js';
import { defineTool } from '../tool.js';

/** Market tools: `/v1/markets` (docs/API.md §4) and one market's details with its instrument state at an instant. */

/** At most this many entries per search answer (~40 KB: an entry with its instrument fields is ~0.8 KB); `/v1/markets` allows 1,000. */
export const MAX_SEARCH = 50;

export const searchMarkets = defineTool({
  name: 'search_markets',
  title: 'Search markets',
  description:
    'Outcome tokens that have data, most active first (total_ticks desc, then asset_id), as GET /v1/markets lists them: market (condition id), ' +
    'asset_id (the token id every other tool takes), side (outcome label), first_seen/last_seen (UTC text), total_ticks, question, slug and the ' +
    'conditions of its last 7 UTC days of coverage. `search` is a case-insensitive substring of the condition id or question; page with offset ' +
    `(total = all matches). Bounded: at most ${MAX_SEARCH} entries (~40 KB).`,
  input: z.strictObject({
    search: text(200, 'Case-insensitive substring of the condition id or the question (default: every market)').optional(),
    limit: intIn(1, MAX_SEARCH, 'Entries at most (default 10)').optional(),
    offset: intIn(0, Number.MAX_SAFE_INTEGER, 'Entries to skip (default 0)').optional(),
  }),
  output: z.object({
    markets: z.array(MarketEntrySchema),
    count: z.number().int(),
    offset: z.number().int(),
    limit: z.number().int(),
    total: z.number().int(),
  }),
  async run(args, deps, call) {
    const limit = args.limit ?? 10;
    const offset = args.offset ?? 0;
    const { entries, total } = await listMarkets(deps.engine, { search: args.search ?? '', limit, offset }, deps.clock.now(), call.signal);
    return { markets: entries, count: entries.length, offset, limit, total };
  },
});

export const getMarket = defineTool({
  name: 'get_market',
  title: 'Market details and instrument state at an instant',
  description:
    'One outcome token’s market at an instant: every token of the market as search_markets lists them (as of now), the instrument as ' +
    'GET /v1/instruments answers at the instant (tick_size, min_order_size in shares, neg_risk, fees, status open/resolved, winner, resolved_at, ' +
    'with `source` per field: history as of the instant, metadata as stored now, or Polymarket’s default), the top of the book (as get_price; ' +
    'null before its first book) and the last trade at or before it (price, taker side; null when none). Bounded: the market’s tokens (~5 KB).',
  input: z.strictObject({
    asset_id: assetId(),
    timestamp: instant('The instant: Unix ms or ISO 8601 (default: latest; the instrument then as of now)').optional(),
  }),
  output: z.object({
    asset_id: z.string(),
    timestamp: z.number().int().nullable(),
    market: z.string(),
    tokens: z.array(MarketEntrySchema),
    instrument: InstrumentSchema,
    quote: PriceSchema.nullable(),
    last_trade: z.object({ timestamp: z.number().int(), price: z.number(), side: z.enum(['BUY', 'SELL', '']) }).nullable(),
  }),
  async run(args, deps, call) {
    const at = toMs('timestamp', args.timestamp) ?? null;
    // The window is checked before anything is read (an explicit instant), as every book route does.
    const books = booksIn(call.window, deps.books, at, call.signal);
    const tokens = await marketOfAsset(deps.engine, args.asset_id, deps.clock.now(), call.signal);
    const token = tokens.find((t) => t.asset_id === args.asset_id);
    if (!token) throw notFound(`No data for asset ${args.asset_id}.`);
    const [instrument, state, trade] = await Promise.all([
      // As /v1/instruments: latest = now, a later instant than now + the clock lead answers as of then.
      readInstrument(deps.engine, args.asset_id, endInWindow(call.window, at ?? deps.clock.now()), call.signal),
      books.find(args.asset_id),
      lastTradeAt(deps.engine, args.asset_id, at, call.signal),
    ]);
    // A latest answer is about the time of its data, which must lie in the window (as the CLOB /last-trade-price).
    if (trade && at === null) assertInWindow(call.window, trade.timestamp);
    return {
      asset_id: args.asset_id,
      timestamp: at,
      market: token.market,
      tokens,
      instrument,
      quote: state && priceData(args.asset_id, state),
      last_trade: trade && { timestamp: Number(trade.timestamp), price: trade.price, side: trade.side },
    };
  },
});
