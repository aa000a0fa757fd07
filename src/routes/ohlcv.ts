import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { windowOf } from '../auth/history-window.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { semantics } from '../http/data-semantics.js';
import { ok } from '../http/envelope.js';
import { DATA_ERRORS, errorResponses, successResponse } from '../http/openapi.js';
import { assetIdParam, enumParam, intParam, orderedRange, timeParam } from '../http/params.js';
import { RESOLUTIONS } from '../queries/ohlcv.js';
import { CandleSchema, candlesInWindow } from '../use-cases/candles.js';

const ohlcvQuery = orderedRange(
  z.object({
    asset_id: assetIdParam(),
    resolution: enumParam('resolution', RESOLUTIONS).optional(),
    start: timeParam('start').optional(),
    end: timeParam('end').optional(),
    limit: intParam('limit', 1, 1000).optional(),
  }),
  'start',
  'end',
);

const ohlcvRoute = createRoute({
  method: 'get',
  path: '/v1/ohlcv',
  operationId: 'getCandles',
  tags: ['candles'],
  summary: 'OHLCV candles of best_bid over price_change ticks',
  description:
    `${semantics('candles', 'volume', 'buckets')} ` +
    'Buckets with start in [floor(start), end]. Only start: the first `limit` from there; only end or neither (end = now): the last `limit` up to end; both: ' +
    'the first `limit` from start. Always ascending.',
  security: [{ bearer: [] }],
  request: { query: ohlcvQuery },
  responses: {
    200: successResponse('Candles, ascending', z.array(CandleSchema), z.object({ count: z.number().int(), resolution: z.enum(RESOLUTIONS) })),
    ...errorResponses(...DATA_ERRORS),
  },
});

export function registerOhlcvRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(ohlcvRoute, async (c) => {
    const q = c.req.valid('query');
    const resolution = q.resolution ?? '1h';
    const candles = await candlesInWindow(deps, windowOf(c), { ...q, resolution, limit: q.limit ?? 100 }, c.req.raw.signal);
    return ok(c, candles, { count: candles.length, resolution });
  });
}
