import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { checkHistoryWindow } from '../auth/history-window.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { ok } from '../http/envelope.js';
import { DATA_ERRORS, errorResponses, successResponse } from '../http/openapi.js';
import { assetIdParam, orderedRange, timeParam } from '../http/params.js';
import { coverageReport } from '../queries/coverage.js';
import { CoverageSchema } from '../use-cases/coverage.js';

const coverageQuery = orderedRange(
  z.object({
    asset_id: assetIdParam(),
    start: timeParam('start'),
    end: timeParam('end'),
  }),
  'start',
  'end',
);

const coverageRoute = createRoute({
  method: 'get',
  path: '/v1/coverage',
  operationId: 'getCoverage',
  tags: ['coverage'],
  summary: 'What was recorded for an asset, what is missing and why, and where the rebuilt book drifted from the exchange',
  description:
    'From the recorder’s capture records and the drift checks made at ingest (docs/TIME-MACHINE.md §4). Times are Unix ms; intervals are from ≤ t < to, ' +
    'clipped to [start, min(end, now)). Day conditions: available (captured all day, no drift), degraded (some gap or drift), missing (nothing captured), ' +
    'unknown (no capture record).',
  security: [{ bearer: [] }],
  request: { query: coverageQuery },
  responses: {
    200: successResponse('The coverage', CoverageSchema),
    ...errorResponses(...DATA_ERRORS),
  },
});

export function registerCoverageRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(coverageRoute, async (c) => {
    const q = c.req.valid('query');
    checkHistoryWindow(c, { explicitStart: q.start });
    return ok(c, await coverageReport(deps.engine, q, deps.clock.now(), c.req.raw.signal));
  });
}
