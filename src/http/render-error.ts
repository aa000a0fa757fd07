import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { EngineUnavailableError } from '../clickhouse/errors.js';
import { log } from '../log.js';
import type { AppEnv } from './context.js';
import { ApiError, serviceUnavailable } from './errors.js';
import { redactedPath } from './middleware.js';

/**
 * The one place errors become responses (API.md §6). `body` shapes the JSON: the `/v1` envelope by
 * default; the Polymarket-compatible routes pass Polymarket's `{"error": …}` (TIME-MACHINE.md §2).
 * Status and headers (`Retry-After`) are the same either way.
 */
export function renderError(err: Error, c: Context<AppEnv>, body: (e: ApiError) => object = (e) => e.body()) {
  let apiError: ApiError;
  if (err instanceof ApiError) apiError = err;
  else if (err instanceof EngineUnavailableError) apiError = serviceUnavailable('ClickHouse');
  else if (err instanceof HTTPException && err.status === 400) {
    // Hono's JSON body parser: a body that is not JSON.
    apiError = new ApiError('invalid_parameter', 'The request body must be a JSON object.', { param: 'body' });
  } else if (c.req.raw.signal?.aborted) {
    // The client went away (its engine query was cancelled with it): nobody reads this answer.
    log.info('client closed request', { request_id: c.get('requestId'), path: redactedPath(c.req.path) });
    return c.body(null, 499 as 400);
  } else {
    const requestId = c.get('requestId');
    log.error('unhandled error', { request_id: requestId, error: err.stack ?? String(err) });
    apiError = new ApiError('internal_error', 'Internal error; quote request_id when reporting it.', { request_id: requestId });
  }
  for (const [name, value] of Object.entries(apiError.headers)) c.header(name, value);
  return c.json(body(apiError), apiError.status as 400);
}
