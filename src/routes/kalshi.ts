import type { OpenAPIHono as OpenAPIHonoType } from '@hono/zod-openapi';
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { booksInWindow } from '../auth/book-in-window.js';
import { assertInWindow, endInWindow, windowOf } from '../auth/history-window.js';
import { dailyLimit, requirePathKey } from '../auth/middleware.js';
import type { Level } from '../book/index.js';
import type { BookReader } from '../book-history/port.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { ApiError, notFound } from '../http/errors.js';
import { messageParam } from '../http/params.js';
import { kalshiErrorBody, renderError } from '../http/render-error.js';
import { kalshiTrades, type StoredTrade } from '../queries/kalshi-trades.js';
import { MAX_TIME } from '../time.js';
import { isKalshiAssetId, kalshiAssetId } from '../venues/kalshi/ids.js';

/**
 * Kalshi's REST market data at any past instant (docs/KALSHI.md §5), the twin of the Polymarket CLOB
 * surface: an official Kalshi SDK whose base URL is `…/v1/kalshi/{key}/at/{instant}/trade-api/v2` gets
 * the answer Kalshi would have given at that millisecond, in Kalshi's current shapes and units. Books
 * come from the app's BookReader (the reconstruction `/v1/orderbook?asset_id=kalshi:<ticker>` serves);
 * the key in the path authenticates, and every endpoint counts as one data request.
 */
const BASE = '/v1/kalshi/:key/at/:instant/trade-api/v2';

/** Kalshi's `depth` bound (levels per side; 0 = all). */
const MAX_DEPTH = 100;
/** Kalshi's price unit: 1/10,000 dollar (`*_dollars` strings have 4 decimals). */
const PRICE_UNITS = 10_000;
/** Kalshi's count unit: 1/100 contract (`*_fp` strings have 2 decimals). */
const COUNT_UNITS = 100;

const PathParams = z.object({
  key: z.string().openapi({ param: { name: 'key', in: 'path' }, description: 'Your API key (the SDKs send no tickhouse header)' }),
  instant: z
    .string()
    .refine((raw) => raw === 'latest' || (/^\d+$/.test(raw) && Number(raw) <= MAX_TIME), 'instant must be Unix milliseconds or latest')
    .transform((raw) => (raw === 'latest' ? null : Number(raw)))
    .openapi({ param: { name: 'instant', in: 'path' }, type: 'string', description: 'Unix ms, or `latest`', example: '1778774400000' }),
  ticker: z
    .string()
    .refine((raw) => isKalshiAssetId(`kalshi:${raw}`), 'ticker must be a Kalshi market ticker (1-100 of A-Z a-z 0-9 . _ -)')
    .openapi({ param: { name: 'ticker', in: 'path' }, example: 'KXBTCD-26MAY1417-T94999.99' }),
});

const DepthQuery = z.object({
  depth: z
    .string()
    .optional()
    .refine((raw) => raw === undefined || (/^\d+$/.test(raw) && Number(raw) <= MAX_DEPTH), `depth must be an integer 0-${MAX_DEPTH}`)
    .transform((raw) => (raw === undefined || raw === '0' ? Number.POSITIVE_INFINITY : Number(raw)))
    .openapi({ type: 'integer', minimum: 0, maximum: MAX_DEPTH, description: 'Levels per side, best first; 0 or absent: all' }),
});

const KalshiError = z.object({ error: z.object({ code: z.string(), message: z.string(), service: z.string() }) }).openapi('KalshiError');
const json = <T extends z.ZodType>(description: string, schema: T) => ({ description, content: { 'application/json': { schema } } });

const Ladder = z.array(z.array(z.string())).openapi({ description: '`[price_dollars, count_fp]` pairs, price ascending (the best bid last)' });
const OrderbookResponse = z.object({ orderbook_fp: z.object({ yes_dollars: Ladder, no_dollars: Ladder }) }).openapi('KalshiOrderbookResponse');

const orderbookRoute = createRoute({
  method: 'get',
  path: '/v1/kalshi/{key}/at/{instant}/trade-api/v2/markets/{ticker}/orderbook',
  operationId: 'getKalshiOrderbook',
  tags: ['kalshi'],
  summary: 'Kalshi `GET /markets/{ticker}/orderbook` at the instant: its YES and NO bid ladders',
  security: [],
  request: { params: PathParams, query: DepthQuery },
  responses: {
    200: json('Both bid ladders as Kalshi sends them: YES bids = the book’s bids, NO bids at 1 − each ask', OrderbookResponse),
    400: json('Bad parameter', KalshiError),
    401: json('Unknown API key in the path', KalshiError),
    403: json('The instant is outside the plan’s history window', KalshiError),
    404: json('No book of that market at the instant', KalshiError),
    429: json('Daily request limit reached', KalshiError),
    500: json('Internal error (a bug); the message names the request id', KalshiError),
    503: json('ClickHouse is unavailable; retry shortly', KalshiError),
  },
});

/** Kalshi's `limit` bounds and default for `GET /markets/trades`. */
const MAX_TRADES = 1000;
const DEFAULT_TRADES = 100;
/** The largest Unix seconds accepted for `min_ts`/`max_ts` (the largest instant, MAX_TIME ms). */
const MAX_SECONDS = Math.floor(MAX_TIME / 1000);
/** Our cursor: the last trade served, `<t ms>.<seq>` (opaque to the client). */
const CURSOR = /^(\d{1,16})\.(\d{1,16})$/;

/** A parameter parsed from its raw text; a bad or missing value → 400 with `message` (optional: `.optional()`). */
const param = messageParam;

const seconds = (name: string, description: string) =>
  param(`${name} must be Unix seconds (an integer, 0 or more)`, (raw) => (/^\d{1,16}$/.test(raw) && Number(raw) <= MAX_SECONDS ? Number(raw) : undefined))
    .optional()
    .openapi({ type: 'integer', format: 'int64', minimum: 0, description });

const TradesQuery = z.object({
  ticker: z
    .string({ error: 'ticker is required here: this service serves the trades of one market at a time, not every market’s' })
    .refine((raw) => isKalshiAssetId(`kalshi:${raw}`), 'ticker must be a Kalshi market ticker (1-100 of A-Z a-z 0-9 . _ -)')
    .openapi({ description: 'The market (required here, optional on Kalshi)', example: 'KXBTCD-26MAY1417-T94999.99' }),
  min_ts: seconds('min_ts', 'Trades at or after this Unix second'),
  max_ts: seconds('max_ts', 'Trades before this Unix second'),
  limit: param(`limit must be an integer 1-${MAX_TRADES}`, (raw) =>
    /^\d{1,4}$/.test(raw) && Number(raw) >= 1 && Number(raw) <= MAX_TRADES ? Number(raw) : undefined,
  )
    .optional()
    .openapi({ type: 'integer', minimum: 1, maximum: MAX_TRADES, description: `Trades per page, default ${DEFAULT_TRADES}` }),
  cursor: param('cursor must be a cursor this API returned (or empty)', (raw) => {
    if (raw === '') return null;
    const m = CURSOR.exec(raw);
    return m && Number(m[1]) <= MAX_TIME && Number.isSafeInteger(Number(m[2])) ? { t: Number(m[1]), seq: Number(m[2]) } : undefined;
  })
    .optional()
    .openapi({ type: 'string', description: 'The `cursor` of the previous page; absent or empty: the first page' }),
  is_block_trade: param('is_block_trade must be true or false', (raw) => (raw === 'true' ? true : raw === 'false' ? false : undefined))
    .optional()
    .openapi({ type: 'boolean', description: 'No stored trade is a block trade: `true` answers no trades' }),
});

const Trade = z
  .object({
    trade_id: z.string(),
    ticker: z.string(),
    count_fp: z.string(),
    yes_price_dollars: z.string(),
    no_price_dollars: z.string(),
    taker_side: z.enum(['yes', 'no']),
    taker_outcome_side: z.enum(['yes', 'no']),
    taker_book_side: z.enum(['bid', 'ask']),
    created_time: z.string(),
    is_block_trade: z.boolean(),
  })
  .openapi('KalshiTrade');
const TradesResponse = z.object({ trades: z.array(Trade), cursor: z.string() }).openapi('KalshiTradesResponse');

const tradesRoute = createRoute({
  method: 'get',
  path: '/v1/kalshi/{key}/at/{instant}/trade-api/v2/markets/trades',
  operationId: 'getKalshiTrades',
  tags: ['kalshi'],
  summary: 'Kalshi `GET /markets/trades` at the instant: one market’s trades up to it, newest first',
  security: [],
  request: { params: PathParams.omit({ ticker: true }), query: TradesQuery },
  responses: {
    200: json('Trades at or before the instant, newest first; `cursor` empty on the last page', TradesResponse),
    400: json('Bad or missing parameter (`ticker` is required here)', KalshiError),
    401: json('Unknown API key in the path', KalshiError),
    403: json('The instant (or `min_ts`) is outside the plan’s history window', KalshiError),
    429: json('Daily request limit reached', KalshiError),
    500: json('Internal error (a bug); the message names the request id', KalshiError),
    503: json('ClickHouse is unavailable; retry shortly', KalshiError),
  },
});

/** Whole hundredths as Kalshi's `*_fp` text (exact in integers). */
const hundredths = (units: number) => `${Math.floor(units / 100)}.${String(units % 100).padStart(2, '0')}`;
/** Whole 1/10,000 dollars as Kalshi's `*_dollars` text with 4 decimals (0 ≤ units ≤ 10,000). */
const tenThousandths = (units: number) => `${Math.floor(units / PRICE_UNITS)}.${String(units % PRICE_UNITS).padStart(4, '0')}`;

/** A stored trade as Kalshi's `Trade`: YES price as stored, NO = 1 − YES in whole 1/10,000 dollars; the taker side in all three fields. */
export function kalshiTrade(ticker: string, r: StoredTrade) {
  const yes = Math.round(r.price * PRICE_UNITS);
  const outcome = r.side === 'SELL' ? 'no' : 'yes';
  return {
    trade_id: r.id,
    ticker,
    count_fp: hundredths(Math.round(r.size * COUNT_UNITS)),
    yes_price_dollars: tenThousandths(yes),
    no_price_dollars: tenThousandths(PRICE_UNITS - yes),
    taker_side: outcome,
    taker_outcome_side: outcome,
    taker_book_side: outcome === 'yes' ? 'bid' : 'ask',
    created_time: new Date(r.t).toISOString(),
    is_block_trade: false,
  } as const;
}

/** A price of the book as Kalshi's `*_dollars` text (4 decimals). */
const dollars = (units: number) => (units / PRICE_UNITS).toFixed(4);
const count = (size: number) => (Math.round(size * COUNT_UNITS) / COUNT_UNITS).toFixed(2);

/**
 * A side of the book as a Kalshi bid ladder, ascending (best last): YES bids are the bids as stored;
 * a NO bid at q is the ask at 1 − q, computed in whole 1/10,000 dollars as the ingest did.
 */
export function kalshiLadder(levels: readonly Level[], side: 'yes' | 'no', depth: number): string[][] {
  const best = depth >= levels.length ? levels : levels.slice(0, depth);
  const out: string[][] = [];
  for (let i = best.length - 1; i >= 0; i--) {
    const units = Math.round(best[i].price * PRICE_UNITS);
    out.push([dollars(side === 'yes' ? units : PRICE_UNITS - units), count(best[i].size)]);
  }
  return out;
}

/** Kalshi's REST market data at any instant under /v1/kalshi/{key}/at/{instant}/trade-api/v2: a sub-app for Kalshi's error shape. */
export function registerKalshiRoutes(app: OpenAPIHonoType<AppEnv>, deps: AppDeps, books: BookReader): void {
  const kalshi = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (result.success) return;
      const issue = result.error.issues[0];
      throw new ApiError('invalid_parameter', issue.message, { param: String(issue.path[0] ?? result.target) });
    },
  });
  kalshi.onError((err, c) => renderError(err, c, kalshiErrorBody));
  kalshi.use(`${BASE}/*`, requirePathKey(deps, '/v1/kalshi/<key>/at/<instant>/trade-api/v2/…'));
  kalshi.use(`${BASE}/markets/:ticker/orderbook`, dailyLimit(deps));
  kalshi.use(`${BASE}/markets/trades`, dailyLimit(deps));

  kalshi.openapi(orderbookRoute, async (c) => {
    const { instant, ticker } = c.req.valid('param');
    const { depth } = c.req.valid('query');
    const { book } = await booksInWindow(c, books, instant).get(kalshiAssetId(ticker), `no book of market ${ticker} was recorded at that instant`);
    return c.json(
      { orderbook_fp: { yes_dollars: kalshiLadder(book.side('bid'), 'yes', depth), no_dollars: kalshiLadder(book.side('ask'), 'no', depth) } },
      200,
    );
  });

  kalshi.openapi(tradesRoute, async (c) => {
    const { instant } = c.req.valid('param');
    const q = c.req.valid('query');
    const window = windowOf(c);
    if (instant !== null) assertInWindow(window, instant);
    // Trades at or before the instant (never past what can exist yet), in [min_ts, max_ts) seconds.
    let to = endInWindow(window, instant ?? MAX_TIME);
    if (q.max_ts !== undefined) to = Math.min(to, q.max_ts * 1000 - 1);
    let from = Math.max(0, window.earliestAllowed);
    if (q.min_ts !== undefined) {
      assertInWindow(window, q.min_ts * 1000);
      from = q.min_ts * 1000;
    }
    const limit = q.limit ?? DEFAULT_TRADES;
    if (q.is_block_trade === true) return c.json({ trades: [], cursor: '' }, 200);
    // A cursor past the range's end leaves every trade of the range after it.
    const after = q.cursor && q.cursor.t <= to ? q.cursor : undefined;
    const rows = await kalshiTrades(deps.engine, { assetId: kalshiAssetId(q.ticker), from, to, after, limit: limit + 1 }, c.req.raw.signal);
    const page = rows.length > limit ? rows.slice(0, limit) : rows;
    const last = page[page.length - 1];
    return c.json({ trades: page.map((r) => kalshiTrade(q.ticker, r)), cursor: rows.length > limit ? `${last.t}.${last.seq}` : '' }, 200);
  });

  // Anything else under the base: Kalshi's error shape, not the /v1 envelope.
  kalshi.all(`${BASE}/*`, (c) => {
    throw notFound(`Not found: ${c.req.method} ${c.req.path.replace(/^\/v1\/kalshi\/[^/]*\/at\/[^/]*\/trade-api\/v2/, '')}`);
  });

  app.route('/', kalshi);
}
