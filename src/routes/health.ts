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
  summary: 'ClickHouse and the account store are reachable',
  responses: {
    200: {
      description: 'Ready',
      content: { 'application/json': { schema: z.object({ status: z.literal('ready'), clickhouse: z.boolean(), account_store: z.boolean() }) } },
    },
    503: {
      description: 'A dependency is unreachable',
      content: { 'application/json': { schema: z.object({ status: z.literal('unavailable'), clickhouse: z.boolean(), account_store: z.boolean() }) } },
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
    if (clickhouse && account_store) return c.json({ status: 'ready' as const, clickhouse, account_store }, 200);
    c.header('Retry-After', '5');
    return c.json({ status: 'unavailable' as const, clickhouse, account_store }, 503);
  });
  app.openapi(metricsRoute, (c) => c.text(metrics.render(), 200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' }));
}
