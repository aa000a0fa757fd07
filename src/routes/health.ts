import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { metrics } from '../metrics.js';

const healthz = createRoute({
  method: 'get',
  path: '/healthz',
  operationId: 'getHealth',
  security: [],
  tags: ['operations'],
  summary: 'The process is up',
  responses: { 200: { description: 'Up', content: { 'application/json': { schema: z.object({ status: z.literal('ok') }) } } } },
});

const readyz = createRoute({
  method: 'get',
  path: '/readyz',
  operationId: 'getReadiness',
  security: [],
  tags: ['operations'],
  summary: 'ClickHouse and the account store are reachable, and no first-start data load is under way',
  description:
    '503 `unavailable` while ClickHouse or the account store does not answer; 503 `loading` while the demo dataset of a first start is still ' +
    'being loaded (the service answers meanwhile, from partial data). Both carry Retry-After.',
  responses: {
    200: {
      description: 'Ready',
      content: { 'application/json': { schema: z.object({ status: z.literal('ready'), clickhouse: z.boolean(), account_store: z.boolean() }) } },
    },
    503: {
      description: 'A dependency is unreachable, or the demo dataset is still loading',
      content: {
        'application/json': { schema: z.object({ status: z.enum(['unavailable', 'loading']), clickhouse: z.boolean(), account_store: z.boolean() }) },
      },
    },
  },
});

const metricsRoute = createRoute({
  method: 'get',
  path: '/metrics',
  operationId: 'getMetrics',
  security: [],
  tags: ['operations'],
  summary: 'Prometheus metrics',
  responses: { 200: { description: 'Prometheus text format', content: { 'text/plain': { schema: z.string() } } } },
});

/**
 * How long a successful readiness check answers for. /readyz is public: without this, a client
 * polling it in a loop would put an engine query and (embedded) a synced file write beside every
 * request of everyone else. With it, callers cost at most one passing check a second, and concurrent
 * callers share the check in flight. A failing check is not reused: recovery shows at once.
 */
const READY_CHECK_MS = 1_000;

export function registerHealthRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps) {
  let last: { at: number; check: Promise<[boolean, boolean]> } | undefined;
  const readiness = () => {
    const now = deps.clock.now();
    if (!last || now - last.at >= READY_CHECK_MS) {
      const check = Promise.all([deps.engine.ping().catch(() => false), deps.accounts.ping().catch(() => false)]);
      const entry = { at: now, check };
      last = entry;
      // Only a pass is kept: the next caller after a failure checks again.
      void check.then(([engine, store]) => {
        if (!(engine && store) && last === entry) last = undefined;
      });
    }
    return last.check;
  };
  app.openapi(healthz, (c) => c.json({ status: 'ok' as const }, 200));
  app.openapi(readyz, async (c) => {
    const [clickhouse, account_store] = await readiness();
    const loading = deps.loading?.() ?? false;
    if (clickhouse && account_store && !loading) return c.json({ status: 'ready' as const, clickhouse, account_store }, 200);
    c.header('Retry-After', loading ? '1' : '5');
    return c.json({ status: clickhouse && account_store ? ('loading' as const) : ('unavailable' as const), clickhouse, account_store }, 503);
  });
  app.openapi(metricsRoute, (c) => c.text(metrics.render(), 200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' }));
}
