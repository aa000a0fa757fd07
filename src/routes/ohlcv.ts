import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { assertInHistoryWindow, checkHistoryWindow } from '../auth/history-window.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { SEMANTICS, semantics } from '../http/data-semantics.js';
import { ok } from '../http/envelope.js';
import { DATA_ERRORS, errorResponses, successResponse } from '../http/openapi.js';
import { assetIdParam, enumParam, intParam, orderedRange, timeParam } from '../http/params.js';
import { type CandleQuery, floorToResolution, newestCandleBefore, queryCandles, RESOLUTIONS } from '../queries/ohlcv.js';

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

const Candle = z
  .object({
    timestamp: z.number().int().openapi({ description: 'Bucket start, Unix ms (UTC-aligned)' }),
    open: z.number(),
    high: z.number(),
    low: z.number(),
    close: z.number(),
    volume: z.number().int().openapi({ description: SEMANTICS.volume }),
  })
  .openapi('Candle');

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
    200: successResponse('Candles, ascending', z.array(Candle), z.object({ count: z.number().int(), resolution: z.enum(RESOLUTIONS) })),
    ...errorResponses(...DATA_ERRORS),
  },
});

export function registerOhlcvRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(ohlcvRoute, async (c) => {
    const q = c.req.valid('query');
    const resolution = q.resolution ?? '1h';
    const limit = q.limit ?? 100;
    const earliest = checkHistoryWindow(c, { explicitStart: q.start });
    const end = q.end ?? deps.clock.now();
    const to = floorToResolution(end, resolution);
    const signal = c.req.raw.signal;
    // With a start: the first `limit` buckets from it. Without: the last `limit` up to end, inside
    // the window (its midnight start is aligned to every resolution).
    const query: CandleQuery =
      q.start !== undefined
        ? { asset_id: q.asset_id, resolution, from: floorToResolution(q.start, resolution), to, limit, take: 'first' }
        : { asset_id: q.asset_id, resolution, from: earliest, to, limit, take: 'last' };
    const candles = await queryCandles(deps.engine, query, signal);
    if (candles.length === 0 && q.start === undefined) {
      const newest = await newestCandleBefore(deps.engine, q.asset_id, end, signal);
      if (newest !== null) assertInHistoryWindow(c, newest);
    }
    return ok(c, candles, { count: candles.length, resolution });
  });
}
