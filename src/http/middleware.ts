import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import { log } from '../log.js';
import { metrics } from '../metrics.js';
import { redactPath } from '../redact.js';
import type { AppEnv } from './context.js';
import { currentRequestScope } from './request-scope.js';

const requests = metrics.counter('tickhouse_http_requests_total', 'HTTP requests by route, method and status');
const latency = metrics.histogram('tickhouse_http_request_duration_seconds', 'HTTP request latency by route (until the handler returns; streams excluded)');

/** Echoes a sane client X-Request-Id or makes one; every response carries it (docs/API.md §1). */
export function requestId(): MiddlewareHandler<AppEnv> {
  return async function requestId(c, next) {
    const given = c.req.header('x-request-id');
    const id = given && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    c.set('requestId', id);
    const scope = currentRequestScope();
    if (scope) scope.requestId = id;
    c.header('X-Request-Id', id);
    await next();
    c.res.headers.set('X-Request-Id', id);
  };
}

/**
 * Every 401 names the scheme that would succeed (RFC 9110 §11.6.1 requires the challenge). Set here,
 * after the response exists, so it holds whichever code path produced the 401.
 */
export function bearerChallenge(): MiddlewareHandler<AppEnv> {
  return async function bearerChallenge(c, next) {
    await next();
    if (c.res.status === 401 && !c.res.headers.has('WWW-Authenticate')) c.res.headers.set('WWW-Authenticate', 'Bearer');
  };
}

/** One JSON log line and the metrics of each request. */
export function accessLog(): MiddlewareHandler<AppEnv> {
  return async function accessLog(c, next) {
    const started = performance.now();
    await next();
    const ms = performance.now() - started;
    const status = c.get('upgraded') ? 101 : c.res.status;
    // The route pattern, not the raw path, keeps label cardinality bounded.
    const route = status === 404 && !c.get('account') ? 'unmatched' : routePath(c);
    requests.inc({ route, method: c.req.method, status: String(status) });
    latency.observe({ route }, ms / 1000);
    log.info('request', {
      method: c.req.method,
      route,
      // The path only (a query string may carry the replay's `key`), with a key in the path masked.
      path: redactPath(c.req.path),
      status,
      ms: Math.round(ms * 10) / 10,
      request_id: c.get('requestId'),
      account_id: c.get('account')?.id,
    });
  };
}
