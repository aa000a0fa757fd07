import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { booksInWindow } from '../auth/book-in-window.js';
import { checkHistoryWindow, existingEnd } from '../auth/history-window.js';
import { executeMarketOrder } from '../book/index.js';
import { sampledBooks } from '../book-history/fold.js';
import type { BookAt, BookReader } from '../book-history/port.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { SEMANTICS } from '../http/data-semantics.js';
import { ok } from '../http/envelope.js';
import { okHistorical } from '../http/immutable.js';
import { DATA_ERRORS, errorResponses, successResponse } from '../http/openapi.js';
import { assetIdParam, enumParam, intParam, orderedRange, positiveNumberParam, timeParam } from '../http/params.js';
import { exchangeSnapshots, pricesHistory } from '../queries/orderbook.js';
import { MAX_TIME } from '../time.js';
import { BookSchema, bookData, bookMissing, ExecutionSchema, PriceSchema, priceData } from '../use-cases/books.js';

/** Answers at an instant before the asset's newest stored event (see okHistorical). */
const historical = {
  304: { description: 'If-None-Match matched the ETag of this historical answer; no body (still counted)' },
};
const historyNote =
  'An answer about an instant before the asset’s newest stored event (history) carries `ETag` and `Cache-Control: private, max-age=31536000, immutable`; ' +
  '`If-None-Match` with that tag gets a 304 (still counted as a request).';
const orderbookRoute = createRoute({
  method: 'get',
  path: '/v1/orderbook',
  operationId: 'getOrderBook',
  tags: ['orderbook'],
  summary: 'The reconstructed L2 book of an asset at any millisecond (default: latest)',
  description: historyNote,
  security: [{ bearer: [] }],
  request: {
    query: z.object({
      asset_id: assetIdParam(),
      timestamp: timeParam('timestamp').optional(),
      limit: intParam('limit', 1, 100).optional().openapi({ description: 'Levels per side, default 20' }),
    }),
  },
  responses: { 200: successResponse('The book after every event with t ≤ timestamp', BookSchema), ...historical, ...errorResponses(...DATA_ERRORS, 404) },
});

const rangeRoute = createRoute({
  method: 'get',
  path: '/v1/orderbook/range',
  operationId: 'getOrderBookRange',
  tags: ['orderbook'],
  summary: 'Exchange snapshots in [since, until], or the book sampled every `interval` ms',
  security: [{ bearer: [] }],
  request: {
    query: orderedRange(
      z.object({
        asset_id: assetIdParam(),
        since: timeParam('since'),
        until: timeParam('until'),
        limit: intParam('limit', 1, 1000).optional().openapi({ description: 'Max books, default 100' }),
        depth: intParam('depth', 1, 100).optional().openapi({ description: 'Levels per side, default 20' }),
        interval: intParam('interval', 1000, MAX_TIME).optional().openapi({ description: 'Sampling step in ms' }),
      }),
      'since',
      'until',
    ),
  },
  responses: { 200: successResponse('Books, ascending', z.array(BookSchema), z.object({ count: z.number().int() })), ...errorResponses(...DATA_ERRORS) },
});

const priceRoute = createRoute({
  method: 'get',
  path: '/v1/price',
  operationId: 'getPrice',
  tags: ['orderbook'],
  summary: 'Top of the reconstructed book at any millisecond (default: latest)',
  description: historyNote,
  security: [{ bearer: [] }],
  request: { query: z.object({ asset_id: assetIdParam(), timestamp: timeParam('timestamp').optional() }) },
  responses: { 200: successResponse('Best bid and ask, midpoint and spread', PriceSchema), ...historical, ...errorResponses(...DATA_ERRORS, 404) },
});

const pricesHistoryRoute = createRoute({
  method: 'get',
  path: '/v1/prices-history',
  operationId: 'getPricesHistory',
  tags: ['orderbook'],
  summary: 'Midpoint after the last tick of each fidelity bucket; `t` in Unix seconds',
  description: SEMANTICS.times,
  security: [{ bearer: [] }],
  request: {
    query: orderedRange(
      z.object({
        asset_id: assetIdParam(),
        start: timeParam('start'),
        end: timeParam('end'),
        fidelity: intParam('fidelity', 1, 86_400).optional().openapi({ description: 'Bucket in seconds, default 60' }),
        limit: intParam('limit', 1, 10_000).optional().openapi({ description: 'Default 1000; keeps the first buckets' }),
      }),
      'start',
      'end',
    ),
  },
  responses: {
    200: successResponse(
      'Points, ascending',
      z.array(z.object({ t: z.number().int().openapi({ description: 'Bucket start, Unix seconds (not ms)' }), p: z.number() })),
      z.object({ count: z.number().int(), fidelity: z.number().int() }),
    ),
    ...errorResponses(...DATA_ERRORS),
  },
});

const executionRoute = createRoute({
  method: 'get',
  path: '/v1/execution-price',
  operationId: 'getExecutionPrice',
  tags: ['orderbook'],
  summary: 'Walk the whole reconstructed book with a market order: VWAP, slippage, fills',
  description: historyNote,
  security: [{ bearer: [] }],
  request: {
    query: z.object({
      asset_id: assetIdParam(),
      side: enumParam('side', ['BUY', 'SELL'] as const).openapi({ description: 'BUY eats asks ascending, SELL eats bids descending' }),
      amount: positiveNumberParam('amount').openapi({ description: 'Shares, fractions allowed' }),
      timestamp: timeParam('timestamp'),
    }),
  },
  responses: { 200: successResponse('The fill of the order', ExecutionSchema), ...historical, ...errorResponses(...DATA_ERRORS, 404) },
});

/** An explicit instant with a stored event after it: before the ingest watermark (BookAt). */
const isHistory = (timestamp: number | undefined, state: BookAt) => timestamp !== undefined && state.next !== Infinity;

export function registerOrderbookRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps, books: BookReader): void {
  const { engine } = deps;

  app.openapi(orderbookRoute, async (c) => {
    const q = c.req.valid('query');
    const state = await booksInWindow(c, books, q.timestamp ?? null).get(q.asset_id, bookMissing(q.asset_id, q.timestamp));
    return okHistorical(c, bookData(q.asset_id, state, q.limit ?? 20), isHistory(q.timestamp, state));
  });

  app.openapi(rangeRoute, async (c) => {
    const q = c.req.valid('query');
    checkHistoryWindow(c, { explicitStart: q.since });
    const depth = q.depth ?? 20;
    const common = { assetId: q.asset_id, since: q.since, until: existingEnd(c, q.until), limit: q.limit ?? 100 };
    const states =
      q.interval === undefined
        ? await exchangeSnapshots(engine, { ...common, depth }, c.req.raw.signal)
        : await sampledBooks(engine, { ...common, interval: q.interval }, c.req.raw.signal);
    return ok(
      c,
      states.map((s) => bookData(q.asset_id, s, depth)),
      { count: states.length },
    );
  });

  app.openapi(priceRoute, async (c) => {
    const q = c.req.valid('query');
    const state = await booksInWindow(c, books, q.timestamp ?? null).get(q.asset_id, bookMissing(q.asset_id, q.timestamp));
    return okHistorical(c, priceData(q.asset_id, state), isHistory(q.timestamp, state));
  });

  app.openapi(pricesHistoryRoute, async (c) => {
    const q = c.req.valid('query');
    checkHistoryWindow(c, { explicitStart: q.start });
    const fidelity = q.fidelity ?? 60;
    const points = await pricesHistory(engine, { assetId: q.asset_id, start: q.start, end: q.end, fidelity, limit: q.limit ?? 1000 }, c.req.raw.signal);
    return ok(c, points, { count: points.length, fidelity });
  });

  app.openapi(executionRoute, async (c) => {
    const q = c.req.valid('query');
    const state = await booksInWindow(c, books, q.timestamp).get(q.asset_id, bookMissing(q.asset_id, q.timestamp));
    return okHistorical(c, executeMarketOrder(state.book, q.side, q.amount), isHistory(q.timestamp, state));
  });
}
