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
    200: { description: 'Ready', content: { 'application/json': { schema: z.object({ status: z.literal('ready'), clickhouse: z.boolean(), account_store: z.boolean() }) } } },
    503: { description: 'A dependency is unreachable', content: { 'application/json': { schema: z.object({ status: z.literal('unavailable'), clickhouse: z.boolean(), account_store: z.boolean() }) } } },
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

export function registerHealthRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps) {
  app.openapi(healthz, (c) => c.json({ status: 'ok' as const }, 200));
  app.openapi(readyz, async (c) => {
    const [clickhouse, account_store] = await Promise.all([
      deps.engine.ping().catch(() => false),
      deps.accounts.ping().catch(() => false),
    ]);
    if (clickhouse && account_store) return c.json({ status: 'ready' as const, clickhouse, account_store }, 200);
    c.header('Retry-After', '5');
    return c.json({ status: 'unavailable' as const, clickhouse, account_store }, 503);
  });
  app.openapi(metricsRoute, (c) => c.text(metrics.render(), 200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' }));
}
