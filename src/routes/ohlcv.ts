import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { assertInWindow, type HistoryWindow, windowOf } from '../auth/history-window.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { SEMANTICS, semantics } from '../http/data-semantics.js';
import { ok } from '../http/envelope.js';
import { DATA_ERRORS, errorResponses, successResponse } from '../http/openapi.js';
import { assetIdParam, enumParam, intParam, orderedRange, timeParam } from '../http/params.js';
import { type Candle, type CandleQuery, floorToResolution, newestCandleBefore, queryCandles, RESOLUTIONS, type Resolution } from '../queries/ohlcv.js';

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

export const CandleSchema = z
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

/**
 * The candles of a `/v1/ohlcv` query (defaults applied) as the caller's window allows: the route's
 * and the MCP `get_candles` tool's one selection (docs/API.md §4).
 */
export async function candlesInWindow(
  deps: Pick<AppDeps, 'engine' | 'clock'>,
  window: HistoryWindow,
  q: { asset_id: string; resolution: Resolution; start?: number; end?: number; limit: number },
  signal?: AbortSignal,
): Promise<Candle[]> {
  const { asset_id, resolution, limit } = q;
  if (q.start !== undefined) assertInWindow(window, q.start);
  const end = q.end ?? deps.clock.now();
  const to = floorToResolution(end, resolution);
  // With a start: the first `limit` buckets from it. Without: the last `limit` up to end, inside
  // the window (its midnight start is aligned to every resolution).
  const query: CandleQuery =
    q.start !== undefined
      ? { asset_id, resolution, from: floorToResolution(q.start, resolution), to, limit, take: 'first' }
      : { asset_id, resolution, from: window.earliestAllowed, to, limit, take: 'last' };
  const candles = await queryCandles(deps.engine, query, signal);
  if (candles.length === 0 && q.start === undefined) {
    const newest = await newestCandleBefore(deps.engine, asset_id, end, signal);
    if (newest !== null) assertInWindow(window, newest);
  }
  return candles;
}
