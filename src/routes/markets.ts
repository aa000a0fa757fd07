import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { ok } from '../http/envelope.js';
import { errorResponses, successResponse } from '../http/openapi.js';
import { intParam, textParam } from '../http/params.js';
import { listMarkets, marketStats } from '../queries/markets.js';
import { MarketEntrySchema } from '../use-cases/markets.js';

const marketsQuery = z.object({
  search: textParam('search', 200).optional().openapi({ description: 'Case-insensitive substring of the condition ID or the question' }),
  limit: intParam('limit', 1, 1000).optional(),
  offset: intParam('offset', 0, Number.MAX_SAFE_INTEGER).optional(),
});

const marketsRoute = createRoute({
  method: 'get',
  path: '/v1/markets',
  operationId: 'listMarkets',
  security: [],
  tags: ['markets'],
  summary: 'Outcome tokens with at least one tick, most active first',
  request: { query: marketsQuery },
  responses: {
    200: successResponse(
      'One page of tokens, by total_ticks desc then asset_id asc',
      z.array(MarketEntrySchema),
      z.object({
        count: z.number().int(),
        offset: z.number().int(),
        limit: z.number().int(),
        total: z.number().int(),
        loading: z
          .literal(true)
          .optional()
          .openapi({ description: 'Present while the demo dataset of a first start is still loading: counts are partial (/readyz says `loading` too)' }),
      }),
    ),
    ...errorResponses(400, 503),
  },
});

const MarketStats = z
  .object({
    total_markets: z.number().int(),
    total_assets: z.number().int(),
    total_ticks: z.number().int(),
    total_snapshots: z.number().int(),
    first_timestamp: z.number().int().nullable(),
    last_timestamp: z.number().int().nullable(),
    ticks_last_24h: z.number().int(),
    events: z.object({ price_change: z.number().int(), book: z.number().int(), last_trade_price: z.number().int() }),
  })
  .openapi('MarketStats');

const statsRoute = createRoute({
  method: 'get',
  path: '/v1/markets/stats',
  operationId: 'getMarketStats',
  security: [],
  tags: ['markets'],
  summary: 'Totals over all stored data',
  responses: {
    200: successResponse('Totals', MarketStats),
    ...errorResponses(503),
  },
});

export function registerMarketsRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(marketsRoute, async (c) => {
    const q = c.req.valid('query');
    const limit = q.limit ?? 100;
    const offset = q.offset ?? 0;
    const { entries, total } = await listMarkets(deps.engine, { search: q.search ?? '', limit, offset }, deps.clock.now(), c.req.raw.signal);
    const loading = deps.loading?.() ? { loading: true as const } : {};
    return ok(c, entries, { count: entries.length, offset, limit, total, ...loading });
  });

  app.openapi(statsRoute, async (c) => ok(c, await marketStats(deps.engine, deps.clock.now(), c.req.raw.signal)));
}
