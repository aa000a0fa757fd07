import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { checkHistoryWindow, existingEnd } from '../auth/history-window.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { ok } from '../http/envelope.js';
import { DATA_ERRORS, errorResponses, successResponse } from '../http/openapi.js';
import { assetIdParam, timeParam } from '../http/params.js';
import { InstrumentSchema, readInstrument } from '../use-cases/instruments.js';

const instrumentsRoute = createRoute({
  method: 'get',
  path: '/v1/instruments',
  operationId: 'getInstrument',
  tags: ['markets'],
  summary: 'An outcome token’s trading rules, fees and status as they were at any millisecond (default: now)',
  description:
    'Each field as of the instant from the stored market channel (tick_size_change, new_market, market_resolved, the books’ tick_size), falling back ' +
    'to market metadata (Gamma) and then Polymarket’s defaults (tick 0.01, minimum order 5, not neg-risk); `source` names which (docs/TIME-MACHINE.md §5).',
  security: [{ bearer: [] }],
  request: { query: z.object({ asset_id: assetIdParam(), timestamp: timeParam('timestamp').optional() }) },
  responses: { 200: successResponse('The instrument at the instant', InstrumentSchema), ...errorResponses(...DATA_ERRORS, 404) },
});

export function registerInstrumentsRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const { engine } = deps;
  app.openapi(instrumentsRoute, async (c) => {
    const q = c.req.valid('query');
    checkHistoryWindow(c, { explicitStart: q.timestamp });
    // No later event can exist than now + the clock lead: a later instant answers as that one does (as_of says so).
    const at = existingEnd(c, q.timestamp ?? deps.clock.now());
    const instrument = await readInstrument(engine, q.asset_id, at, c.req.raw.signal);
    return ok(c, instrument);
  });
}
