import type { OpenAPIHono as OpenAPIHonoType } from '@hono/zod-openapi';
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { type BooksInWindow, booksInWindow } from '../auth/book-in-window.js';
import { checkHistoryWindow, windowOf } from '../auth/history-window.js';
import { dailyLimit, requirePathKey } from '../auth/middleware.js';
import { quoteOf } from '../book/index.js';
import type { BookReader } from '../book-history/port.js';
import type { Engine } from '../clickhouse/engine.js';
import { decimalText } from '../clob/book-summary.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { ApiError, notFound } from '../http/errors.js';
import { messageParam } from '../http/params.js';
import { renderError } from '../http/render-error.js';
import { tokensOfMarket } from '../queries/clob.js';
import { pricesHistory } from '../queries/orderbook.js';
import { MAX_TIME } from '../time.js';
import { ClobReads } from '../use-cases/clob.js';

/**
 * Polymarket's CLOB read API at any past instant (docs/TIME-MACHINE.md §2). A Polymarket client whose
 * `host` is `…/v1/clob/{key}/at/{instant}` gets, for each read method, the answer Polymarket would
 * have given at that millisecond: Polymarket's paths, parameters, shapes, value types and units, and
 * its error shape `{"error": "…"}`. Books come from the app's BookReader (the same reconstruction as
 * `/v1/orderbook`); the key in the path authenticates, and every endpoint counts as one data request.
 */
const BASE = '/v1/clob/:key/at/:instant';
/** Endpoints under BASE, each one counted data request. */
const ENDPOINTS = [
  'book',
  'books',
  'price',
  'prices',
  'midpoint',
  'midpoints',
  'spread',
  'spreads',
  'last-trade-price',
  'last-trades-prices',
  'tick-size',
  'neg-risk',
  'fee-rate',
  'prices-history',
  'clob-markets/:condition_id',
  'markets-by-token/:token_id',
];
/** The batch endpoints: a JSON array body of up to MAX_BOOKS tokens. */
const BATCHES = ['books', 'prices', 'midpoints', 'spreads', 'last-trades-prices'];

/** At most this many tokens per `POST /books` (Polymarket's batch limit). */
const MAX_BOOKS = 500;
/** At most this many `prices-history` points per answer; more is a 400 asking for a larger fidelity. */
const MAX_HISTORY_POINTS = 100_000;

/** Polymarket's `interval` values: a duration ending at the instant (`1m` is a month, taken as 30 days). */
const INTERVAL_MS = { '1h': 3_600_000, '6h': 21_600_000, '1d': 86_400_000, '1w': 604_800_000, '1m': 2_592_000_000 } as const;
const INTERVALS = ['1m', '1w', '1d', '6h', '1h', 'max', 'all'] as const;

// Polymarket's own messages where its API reference gives them.
const NO_BOOK = 'No orderbook exists for the requested token id';
const NO_MARKET = 'market not found';

/** A parameter parsed from its raw text; a bad or missing value → 400 with `message` (optional: `.optional()`). */
const param = messageParam;

const tokenId = (name: string) =>
  param(`Invalid ${name === 'market' ? 'market' : 'token id'}: a token id is 1-100 decimal digits`, (raw) =>
    /^\d{1,100}$/.test(raw) ? raw : undefined,
  ).openapi({
    type: 'string',
    pattern: '^\\d{1,100}$',
    example: '25245433628208476987364023432306599125597948324625578977436890641930158259698',
  });

/** Unix seconds, fractions allowed (Polymarket's `startTs`/`endTs`); in ms. */
const secondsParam = (name: string) =>
  param(`${name} must be Unix seconds (fractions allowed), 0 or more`, (raw) =>
    /^\d+(\.\d+)?$/.test(raw) && Number(raw) <= 8_640_000_000_000 ? Math.round(Number(raw) * 1000) : undefined,
  ).openapi({ type: 'number', minimum: 0, example: 1766481546.487 });

const PathParams = z.object({
  key: z.string().openapi({ param: { name: 'key', in: 'path' }, description: 'Your API key (these clients send no header)' }),
  instant: param('instant must be Unix milliseconds or latest', (raw) =>
    raw === 'latest' ? null : /^\d+$/.test(raw) && Number(raw) <= MAX_TIME ? Number(raw) : undefined,
  ).openapi({ param: { name: 'instant', in: 'path' }, type: 'string', description: 'Unix ms, or `latest`', example: '1766481546487' }),
});
const TokenQuery = z.object({ token_id: tokenId('token_id') });

const ErrorSchema = z.object({ error: z.string() }).openapi('PolymarketError');
const json = <T extends z.ZodType>(description: string, schema: T) => ({ description, content: { 'application/json': { schema } } });
const errorResponses = {
  400: json('Bad parameter (Polymarket: `Invalid token id`, `Invalid side`, `Invalid payload`, …)', ErrorSchema),
  401: json('Unknown API key in the path', ErrorSchema),
  403: json('The instant (or `startTs`) is outside the plan’s history window', ErrorSchema),
  429: {
    ...json('Daily request limit reached', ErrorSchema),
    headers: { 'Retry-After': { description: 'Seconds until the limit resets (00:00 UTC)', schema: { type: 'integer' as const } } },
  },
  500: json('Internal error (a bug); the message names the request id', ErrorSchema),
  503: {
    ...json('ClickHouse is unavailable; retry shortly', ErrorSchema),
    headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' as const } } },
  },
};
const noBookResponse = { 404: json('The token has no book at that instant', ErrorSchema) };

const OrderSummary = z.object({ price: z.string(), size: z.string() }).openapi('PolymarketOrderSummary');
const BookSummarySchema = z
  .object({
    market: z.string(),
    asset_id: z.string(),
    timestamp: z.string().openapi({ description: 'Unix ms of the last event applied' }),
    hash: z.string().openapi({ description: 'SHA-1 of the summary with hash "" (as the exchange computes it)' }),
    bids: z.array(OrderSummary).openapi({ description: 'Price ascending (best last)' }),
    asks: z.array(OrderSummary).openapi({ description: 'Price descending (best last)' }),
    min_order_size: z.string(),
    tick_size: z.string().openapi({ description: 'Tick size in force at the instant (stored history, else metadata, else 0.01)' }),
    neg_risk: z.boolean(),
    last_trade_price: z
      .string()
      .openapi({ description: 'Last trade at or before the instant (a trade, or the last exchange book’s last_trade_price); "" when none' }),
  })
  .openapi('PolymarketOrderBookSummary');

/**
 * Method, path under the base, operation id, tag and summary of a route. No `security`: the key is
 * a path parameter (these clients send no header).
 */
const route = <const M extends 'get' | 'post', const P extends string>(method: M, name: P, operationId: string, summary: string) => ({
  method,
  path: `/v1/clob/{key}/at/{instant}/${name}` as const,
  operationId,
  tags: ['polymarket'],
  summary,
  security: [],
});

const bookRoute = createRoute({
  ...route('get', 'book', 'getClobBook', 'Polymarket `GET /book` at the instant: the whole reconstructed book'),
  request: { params: PathParams, query: TokenQuery },
  responses: { 200: json('OrderBookSummary', BookSummarySchema), ...errorResponses, ...noBookResponse },
});

const booksRoute = createRoute({
  ...route('post', 'books', 'getClobBooks', `Polymarket \`POST /books\`: up to ${MAX_BOOKS} books; tokens without a book at the instant are left out`),
  request: {
    params: PathParams,
    body: {
      required: true,
      content: {
        'application/json': {
          schema: z
            .array(z.object({ token_id: tokenId('token_id'), side: z.enum(['BUY', 'SELL']).optional() }))
            .max(MAX_BOOKS, { error: `at most ${MAX_BOOKS} token ids` }),
        },
      },
    },
  },
  responses: {
    200: json('One OrderBookSummary per token that has a book, in request order', z.array(BookSummarySchema)),
    ...errorResponses,
    413: json('The body is larger than 128 KiB', ErrorSchema),
  },
});

const priceRoute = createRoute({
  ...route('get', 'price', 'getClobPrice', 'Polymarket `GET /price`: the best bid for BUY, the best ask for SELL (0 / 1 for an empty side)'),
  request: {
    params: PathParams,
    query: TokenQuery.extend({
      side: param('Invalid side', (raw) => (raw === 'BUY' || raw === 'SELL' ? raw : undefined)).openapi({ type: 'string', enum: ['BUY', 'SELL'] }),
    }),
  },
  responses: { 200: json('Price, a number', z.object({ price: z.number() })), ...errorResponses, ...noBookResponse },
});

const midpointRoute = createRoute({
  ...route('get', 'midpoint', 'getClobMidpoint', 'Polymarket `GET /midpoint`: (best bid + best ask) / 2, as `/v1/price`'),
  request: { params: PathParams, query: TokenQuery },
  responses: { 200: json('Midpoint, a string', z.object({ mid: z.string() })), ...errorResponses, ...noBookResponse },
});

const spreadRoute = createRoute({
  ...route('get', 'spread', 'getClobSpread', 'Polymarket `GET /spread`: best ask − best bid, as `/v1/price`'),
  request: { params: PathParams, query: TokenQuery },
  responses: { 200: json('Spread, a string', z.object({ spread: z.string() })), ...errorResponses, ...noBookResponse },
});

const lastTradeRoute = createRoute({
  ...route(
    'get',
    'last-trade-price',
    'getClobLastTradePrice',
    'Polymarket `GET /last-trade-price`: the last trade at or before the instant (taker side); without a stored trade, the last exchange book’s ' +
      '`last_trade_price` and side "", else "0.5" and ""',
  ),
  request: { params: PathParams, query: TokenQuery },
  responses: {
    200: json('Price and side', z.object({ price: z.string(), side: z.enum(['BUY', 'SELL', '']) })),
    ...errorResponses,
    404: json('The token has neither a book nor a trade at that instant', ErrorSchema),
  },
});

const tickSizeRoute = createRoute({
  ...route(
    'get',
    'tick-size',
    'getClobTickSize',
    'Polymarket `GET /tick-size` at the instant: from the stored history (tick_size_change, new_market, the books’ tick_size), else market metadata, ' +
      'else Polymarket’s default 0.01',
  ),
  request: { params: PathParams, query: TokenQuery },
  responses: { 200: json('Tick size, a number', z.object({ minimum_tick_size: z.number() })), ...errorResponses, ...noBookResponse },
});

const negRiskRoute = createRoute({
  ...route(
    'get',
    'neg-risk',
    'getClobNegRisk',
    'Polymarket `GET /neg-risk` at the instant: from a stored new_market that states it, else market metadata, else false',
  ),
  request: { params: PathParams, query: TokenQuery },
  responses: { 200: json('Neg risk', z.object({ neg_risk: z.boolean() })), ...errorResponses, ...noBookResponse },
});

const pricesHistoryRoute = createRoute({
  ...route(
    'get',
    'prices-history',
    'getClobPricesHistory',
    'Polymarket `GET /prices-history`: the midpoint after the last tick of each `fidelity`-minute bucket (as `/v1/prices-history`), never a point after the ' +
      'instant',
  ),
  request: {
    params: PathParams,
    query: z
      .object({
        market: tokenId('market'),
        startTs: secondsParam('startTs').optional(),
        endTs: secondsParam('endTs').optional().openapi({ description: 'Unix seconds; later than the instant is cut to the instant' }),
        interval: param(`interval must be one of ${INTERVALS.join(', ')}`, (raw) =>
          (INTERVALS as readonly string[]).includes(raw) ? (raw as (typeof INTERVALS)[number]) : undefined,
        )
          .optional()
          .openapi({
            type: 'string',
            enum: [...INTERVALS],
            description: 'A duration ending at the instant (`1m` = 30 days; `max`/`all` = all the plan allows)',
          }),
        fidelity: param('fidelity must be an integer of minutes between 1 and 525600', (raw) =>
          /^\d+$/.test(raw) && Number(raw) >= 1 && Number(raw) <= 525_600 ? Number(raw) : undefined,
        )
          .optional()
          .openapi({ type: 'integer', minimum: 1, maximum: 525_600, description: 'Bucket in minutes, default 1' }),
      })
      .superRefine((q, ctx) => {
        if (q.interval !== undefined && (q.startTs !== undefined || q.endTs !== undefined)) {
          ctx.addIssue({ code: 'custom', path: ['interval'], message: 'interval and startTs/endTs are mutually exclusive' });
        } else if (q.interval === undefined && q.startTs === undefined) {
          ctx.addIssue({ code: 'custom', path: ['startTs'], message: 'startTs or interval is required' });
        }
      }),
  },
  responses: {
    200: json(
      'Points ascending; `t` Unix seconds (bucket start), `p` a number',
      z.object({ history: z.array(z.object({ t: z.number().int(), p: z.number() })) }),
    ),
    ...errorResponses,
  },
});

/** A batch body: `[{"token_id": …, "side"?: …}, …]`, at most MAX_BOOKS items. */
const batchBody = <T extends z.ZodType>(item: T) => ({
  required: true,
  content: { 'application/json': { schema: z.array(item).max(MAX_BOOKS, { error: `at most ${MAX_BOOKS} token ids` }) } },
});
const TokenItem = z.object({ token_id: tokenId('token_id') });
const batchErrors = { ...errorResponses, 413: json('The body is larger than 128 KiB', ErrorSchema) };
const byToken = (what: string, value: z.ZodType) =>
  json(`${what} of each token that has a book at the instant, by token id (the others left out)`, z.record(z.string(), value));

const midpointsRoute = createRoute({
  ...route('post', 'midpoints', 'getClobMidpoints', `Polymarket \`POST /midpoints\`: \`/midpoint\` of up to ${MAX_BOOKS} tokens`),
  request: { params: PathParams, body: batchBody(TokenItem) },
  responses: { 200: byToken('The midpoint, a string,', z.string()), ...batchErrors },
});

const spreadsRoute = createRoute({
  ...route('post', 'spreads', 'getClobSpreads', `Polymarket \`POST /spreads\`: \`/spread\` of up to ${MAX_BOOKS} tokens`),
  request: { params: PathParams, body: batchBody(TokenItem) },
  responses: { 200: byToken('The spread, a string,', z.string()), ...batchErrors },
});

const pricesRoute = createRoute({
  ...route(
    'post',
    'prices',
    'getClobPrices',
    `Polymarket \`POST /prices\`: per token and side, the best bid for BUY and the best ask for SELL, as strings (Polymarket's reference and the ` +
      `current clients), up to ${MAX_BOOKS} items`,
  ),
  request: { params: PathParams, body: batchBody(TokenItem.extend({ side: z.enum(['BUY', 'SELL']) })) },
  responses: { 200: byToken('{"BUY"?: price, "SELL"?: price}', z.record(z.string(), z.string())), ...batchErrors },
});

const lastTradesRoute = createRoute({
  ...route(
    'post',
    'last-trades-prices',
    'getClobLastTradesPrices',
    `Polymarket \`POST /last-trades-prices\`: \`/last-trade-price\` of up to ${MAX_BOOKS} tokens, each with its token id`,
  ),
  request: { params: PathParams, body: batchBody(TokenItem) },
  responses: {
    200: json(
      'One entry per token that has a book or a trade at the instant, in request order',
      z.array(z.object({ token_id: z.string(), price: z.string(), side: z.enum(['BUY', 'SELL', '']) })),
    ),
    ...batchErrors,
  },
});

const feeRateRoute = createRoute({
  ...route('get', 'fee-rate', 'getClobFeeRate', 'Polymarket `GET /fee-rate` at the instant: the taker base fee in basis points (the instrument’s, else 0)'),
  request: { params: PathParams, query: TokenQuery },
  responses: { 200: json('Base fee, basis points', z.object({ base_fee: z.number() })), ...errorResponses, ...noBookResponse },
});

const ConditionParams = PathParams.extend({
  condition_id: z
    .string()
    .regex(/^0x[0-9a-fA-F]{1,64}$/, { error: 'Invalid condition id' })
    .openapi({ param: { name: 'condition_id', in: 'path' }, example: '0x5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1' }),
});

const clobMarketRoute = createRoute({
  method: 'get',
  path: '/v1/clob/{key}/at/{instant}/clob-markets/{condition_id}',
  operationId: 'getClobMarketInfo',
  tags: ['polymarket'],
  summary:
    'Polymarket `GET /clob-markets/{condition_id}` at the instant: the market’s tokens and outcomes, tick size, minimum order, neg-risk, base fees and fee ' +
    'curve (as /v1/instruments of its first token), plus its protocol version',
  security: [],
  request: { params: ConditionParams },
  responses: {
    200: json(
      'CLOB market info in Polymarket’s compact keys',
      z.object({
        t: z.array(z.object({ t: z.string().openapi({ description: 'Token id' }), o: z.string().openapi({ description: 'Outcome' }) })),
        mos: z.number().openapi({ description: 'Minimum order size' }),
        mts: z.number().openapi({ description: 'Tick size in force at the instant' }),
        nr: z.boolean().openapi({ description: 'Neg risk' }),
        mbf: z.number().openapi({ description: 'Maker base fee, basis points (0 when not stated)' }),
        tbf: z.number().openapi({ description: 'Taker base fee, basis points (0 when not stated)' }),
        fd: z
          .object({ r: z.number(), e: z.number(), to: z.boolean() })
          .optional()
          .openapi({ description: 'Fee curve: rate, exponent, taker only; absent when no fee schedule is known' }),
        protocol_version: z
          .enum(['v1', 'v2'])
          .nullable()
          .openapi({ description: 'tickhouse’s addition: the market’s protocol (Gamma’s `version`, /v1/instruments), null when not stated' }),
      }),
    ),
    ...errorResponses,
    404: json('No token of the market has a book at that instant', ErrorSchema),
  },
});

const marketByTokenRoute = createRoute({
  method: 'get',
  path: '/v1/clob/{key}/at/{instant}/markets-by-token/{token_id}',
  operationId: 'getClobMarketByToken',
  tags: ['polymarket'],
  summary: 'Polymarket `GET /markets-by-token/{token_id}` at the instant: the token’s market (condition id)',
  security: [],
  request: { params: PathParams.extend({ token_id: tokenId('token_id').openapi({ param: { name: 'token_id', in: 'path' } }) }) },
  responses: { 200: json('The condition id', z.object({ condition_id: z.string() })), ...errorResponses, ...noBookResponse },
});

/** Polymarket's error shape; status and headers (Retry-After) as for `/v1`. */
const polymarketError = (e: ApiError) => ({ error: e.message });

/**
 * Polymarket's CLOB read API at any instant under /v1/clob/{key}/at/{instant} (docs/TIME-MACHINE.md §2):
 * a sub-app of its own for Polymarket's error shape and its key in the path, then the routes by kind.
 */
export function registerClobRoutes(app: OpenAPIHonoType<AppEnv>, deps: AppDeps, books: BookReader): void {
  const clob = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (result.success) return;
      const issue = result.error.issues[0];
      const message = result.target === 'json' ? `Invalid payload: ${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}` : issue.message;
      throw new ApiError('invalid_parameter', message, { param: String(issue.path[0] ?? result.target) });
    },
  });
  clob.onError((err, c) => renderError(err, c, polymarketError));

  clob.use(`${BASE}/*`, requirePathKey(deps));
  const counted = dailyLimit(deps);
  for (const name of ENDPOINTS) clob.use(`${BASE}/${name}`, counted);
  for (const name of BATCHES) {
    clob.use(
      `${BASE}/${name}`,
      bodyLimit({
        // 500 token ids of up to 100 digits, with a side each, fit.
        maxSize: 128 * 1024,
        onError: () => {
          throw new ApiError('payload_too_large', 'Invalid payload: the body is larger than 128 KiB.');
        },
      }),
    );
  }

  const reads = (c: Context<AppEnv>) => new ClobReads(deps.engine, windowOf(c), deps.clock.now, c.req.raw.signal);
  const readerOf = (c: Context<AppEnv>, instant: number | null) => booksInWindow(c, books, instant);
  // In this order: the OpenAPI document lists the paths as they were registered.
  registerBookRoutes(clob, reads, readerOf);
  registerPricesHistoryRoute(clob, deps);
  registerBatchRoutes(clob, reads, readerOf);
  registerMarketRoutes(clob, deps.engine, reads, readerOf);

  // Anything else under the base: Polymarket's 404 shape, not the /v1 envelope.
  clob.all(`${BASE}/*`, (c) => {
    throw notFound(`Not found: ${c.req.method} ${c.req.path.replace(/^\/v1\/clob\/[^/]*\/at\/[^/]*/, '')}`);
  });

  app.route('/', clob);
}

type Reads = (c: Context<AppEnv>) => ClobReads;
type ReaderOf = (c: Context<AppEnv>, instant: number | null) => BooksInWindow;

/** Books and what is read off one: `/book` and `POST /books` (summaries), `/price`, `/midpoint`, `/spread`, `/last-trade-price`, `/tick-size`, `/neg-risk`. */
function registerBookRoutes(clob: OpenAPIHono<AppEnv>, reads: Reads, readerOf: ReaderOf): void {
  clob.openapi(bookRoute, async (c) => {
    const reader = readerOf(c, c.req.valid('param').instant);
    const { token_id } = c.req.valid('query');
    const state = await reader.get(token_id, NO_BOOK);
    const read = reads(c);
    return c.json(await read.summary(token_id, state, reader.at, await read.metadata([token_id])), 200);
  });

  clob.openapi(booksRoute, async (c) => {
    const tokens = c.req.valid('json').map((item) => item.token_id);
    return c.json(await reads(c).summaries(readerOf(c, c.req.valid('param').instant), tokens), 200);
  });

  clob.openapi(priceRoute, async (c) => {
    const { token_id, side } = c.req.valid('query');
    const { book } = await readerOf(c, c.req.valid('param').instant).get(token_id, NO_BOOK);
    return c.json({ price: side === 'BUY' ? book.bestBid() : book.bestAsk() }, 200);
  });

  clob.openapi(midpointRoute, async (c) => {
    const { book } = await readerOf(c, c.req.valid('param').instant).get(c.req.valid('query').token_id, NO_BOOK);
    return c.json({ mid: decimalText(quoteOf(book).midpoint) }, 200);
  });

  clob.openapi(spreadRoute, async (c) => {
    const { book } = await readerOf(c, c.req.valid('param').instant).get(c.req.valid('query').token_id, NO_BOOK);
    return c.json({ spread: decimalText(quoteOf(book).spread) }, 200);
  });

  clob.openapi(lastTradeRoute, async (c) => {
    const last = await reads(c).lastTrade(readerOf(c, c.req.valid('param').instant), c.req.valid('query').token_id);
    if (!last) throw notFound(NO_BOOK);
    return c.json(last, 200);
  });

  clob.openapi(tickSizeRoute, async (c) => {
    const { token_id } = c.req.valid('query');
    const reader = readerOf(c, c.req.valid('param').instant);
    await reader.get(token_id, NO_MARKET);
    return c.json({ minimum_tick_size: (await reads(c).rules(token_id, reader.at)).tick_size }, 200);
  });

  clob.openapi(negRiskRoute, async (c) => {
    const { token_id } = c.req.valid('query');
    const reader = readerOf(c, c.req.valid('param').instant);
    await reader.get(token_id, NO_MARKET);
    return c.json({ neg_risk: (await reads(c).rules(token_id, reader.at)).neg_risk }, 200);
  });
}

/** Up to 500 tokens at once, those without a book at the instant left out: `POST /prices`, `/midpoints`, `/spreads`, `/last-trades-prices`. */
function registerBatchRoutes(clob: OpenAPIHono<AppEnv>, reads: Reads, readerOf: ReaderOf): void {
  clob.openapi(midpointsRoute, async (c) => {
    const found = await reads(c).books(
      readerOf(c, c.req.valid('param').instant),
      c.req.valid('json').map((i) => i.token_id),
    );
    return c.json(Object.fromEntries([...found].map(([token, { book }]) => [token, decimalText(quoteOf(book).midpoint)])), 200);
  });

  clob.openapi(spreadsRoute, async (c) => {
    const found = await reads(c).books(
      readerOf(c, c.req.valid('param').instant),
      c.req.valid('json').map((i) => i.token_id),
    );
    return c.json(Object.fromEntries([...found].map(([token, { book }]) => [token, decimalText(quoteOf(book).spread)])), 200);
  });

  clob.openapi(pricesRoute, async (c) => {
    const items = c.req.valid('json');
    const found = await reads(c).books(
      readerOf(c, c.req.valid('param').instant),
      items.map((i) => i.token_id),
    );
    const out: Record<string, Record<string, string>> = {};
    for (const { token_id, side } of items) {
      const state = found.get(token_id);
      if (!state) continue;
      out[token_id] ??= {};
      out[token_id][side] = decimalText(side === 'BUY' ? state.book.bestBid() : state.book.bestAsk());
    }
    return c.json(out, 200);
  });

  clob.openapi(lastTradesRoute, async (c) => {
    const reader = readerOf(c, c.req.valid('param').instant);
    const read = reads(c);
    const tokens = [...new Set(c.req.valid('json').map((i) => i.token_id))];
    const out: { token_id: string; price: string; side: 'BUY' | 'SELL' | '' }[] = [];
    // One at a time: each is a point read or two, and a batch is at most MAX_BOOKS tokens.
    for (const token_id of tokens) {
      const last = await read.lastTrade(reader, token_id);
      if (last) out.push({ token_id, ...last });
    }
    return c.json(out, 200);
  });
}

/** A token's market and fees: `/fee-rate`, `/markets-by-token/{token}`, `/clob-markets/{condition}`. */
function registerMarketRoutes(clob: OpenAPIHono<AppEnv>, engine: Engine, reads: Reads, readerOf: ReaderOf): void {
  clob.openapi(feeRateRoute, async (c) => {
    const { token_id } = c.req.valid('query');
    const reader = readerOf(c, c.req.valid('param').instant);
    await reader.get(token_id, NO_BOOK);
    const instrument = await reads(c).instrument(token_id, reader.at);
    return c.json({ base_fee: instrument.fees.taker_base_fee ?? 0 }, 200);
  });

  clob.openapi(marketByTokenRoute, async (c) => {
    const { instant, token_id } = c.req.valid('param');
    const reader = readerOf(c, instant);
    await reader.get(token_id, NO_MARKET);
    return c.json({ condition_id: (await reads(c).instrument(token_id, reader.at)).market }, 200);
  });

  clob.openapi(clobMarketRoute, async (c) => {
    const { instant, condition_id } = c.req.valid('param');
    const reader = readerOf(c, instant);
    const read = reads(c);
    const tokens = await tokensOfMarket(engine, condition_id, c.req.raw.signal);
    const withBooks = await read.books(reader, tokens);
    if (withBooks.size === 0) throw notFound(NO_MARKET);
    const instruments = await Promise.all(tokens.map((token) => read.instrument(token, reader.at)));
    const [first] = instruments;
    const { rate, exponent, taker_only, maker_base_fee, taker_base_fee } = first.fees;
    return c.json(
      {
        t: instruments.map((i) => ({ t: i.asset_id, o: i.outcome })),
        mos: first.min_order_size,
        mts: first.tick_size,
        nr: first.neg_risk,
        mbf: maker_base_fee ?? 0,
        tbf: taker_base_fee ?? 0,
        ...(rate !== null ? { fd: { r: rate, e: exponent ?? 1, to: taker_only ?? true } } : {}),
        protocol_version: first.protocol_version,
      },
      200,
    );
  });
}

/** `/prices-history`: `startTs`/`endTs` or an `interval` ending at the instant, in `fidelity` minutes. */
function registerPricesHistoryRoute(clob: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  clob.openapi(pricesHistoryRoute, async (c) => {
    const { instant } = c.req.valid('param');
    if (instant !== null) checkHistoryWindow(c, { explicitStart: instant });
    const q = c.req.valid('query');
    const at = instant ?? deps.clock.now();
    let start: number;
    let end = at;
    if (q.interval === 'max' || q.interval === 'all') {
      // All the plan may see: from the start of its window.
      start = Math.max(0, c.get('earliestAllowed'));
    } else if (q.interval !== undefined) {
      start = at - INTERVAL_MS[q.interval];
      checkHistoryWindow(c, { explicitStart: start });
    } else {
      start = q.startTs!;
      checkHistoryWindow(c, { explicitStart: start });
      if (q.endTs !== undefined) end = Math.min(q.endTs, at);
    }
    if (start > end) return c.json({ history: [] }, 200);
    const fidelity = q.fidelity ?? 1;
    const points = await pricesHistory(
      deps.engine,
      { assetId: q.market, start, end, fidelity: fidelity * 60, limit: MAX_HISTORY_POINTS + 1 },
      c.req.raw.signal,
    );
    if (points.length > MAX_HISTORY_POINTS) {
      throw new ApiError('invalid_parameter', `More than ${MAX_HISTORY_POINTS} points: use a larger fidelity or a shorter range.`, { param: 'fidelity' });
    }
    return c.json({ history: points }, 200);
  });
}
