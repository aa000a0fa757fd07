import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { dailyLimit, requireAuth } from './auth/middleware.js';
import { EngineUnavailableError } from './clickhouse/errors.js';
import { registerDashboard } from './dashboard/serve.js';
import type { AppDeps } from './deps.js';
import type { AppEnv } from './http/context.js';
import { ApiError, serviceUnavailable } from './http/errors.js';
import { accessLog, requestId } from './http/middleware.js';
import { log, setLogLevel } from './log.js';
import { cachingBookReader } from './queries/book-reader.js';
import { registerAccountsRoutes } from './routes/accounts.js';
import { registerBillingRoutes } from './routes/billing.js';
import { registerHealthRoutes } from './routes/health.js';
import { registerMarketsRoutes } from './routes/markets.js';
import { registerOhlcvRoutes } from './routes/ohlcv.js';
import { registerOrderbookRoutes } from './routes/orderbook.js';
import { registerOrderbookExportRoute } from './routes/orderbook-export.js';
import { registerTicksRoutes } from './routes/ticks.js';

/**
 * Paths whose every authenticated request counts toward the daily limit (API.md §2). A Hono
 * pattern `/x/*` also matches `/x` itself, so listing both would run the middleware twice.
 */
export const DATA_PATHS = ['/v1/orderbook/*', '/v1/ticks/*', '/v1/ohlcv', '/v1/price', '/v1/prices-history', '/v1/execution-price'];
/** Authenticated but never counted. */
const ACCOUNT_PATHS = ['/v1/me', '/v1/keys/*', '/v1/billing/status', '/v1/billing/subscribe'];

export function createApp(deps: AppDeps) {
  setLogLevel(deps.config.LOG_LEVEL);
  const app = new OpenAPIHono<AppEnv>({
    // Query/body validation failures become 400 invalid_parameter naming the first bad parameter.
    defaultHook: (result) => {
      if (!result.success) {
        const issue = result.error.issues[0];
        const param = issue.path.length ? String(issue.path[0]) : result.target === 'json' ? 'body' : 'query';
        throw new ApiError('invalid_parameter', issue.message, { param });
      }
    },
  });

  app.use('*', requestId(), accessLog());
  const limitBody = bodyLimit({
    maxSize: 16 * 1024,
    onError: () => {
      throw new ApiError('payload_too_large', 'Request body is larger than 16 KiB.');
    },
  });
  // GET and HEAD carry no body. Skipping them matters: bodyLimit reads `c.req.raw.body`, which makes
  // the Node adapter build a full fetch Request for every data request (~0.1 ms of CPU each).
  app.use('/v1/*', (c, next) => (c.req.method === 'GET' || c.req.method === 'HEAD' ? next() : limitBody(c, next)));
  const auth = requireAuth(deps);
  const counted = dailyLimit(deps);
  for (const path of DATA_PATHS) app.use(path, auth, counted);
  for (const path of ACCOUNT_PATHS) app.use(path, auth);

  registerHealthRoutes(app, deps);
  registerAccountsRoutes(app, deps);
  registerBillingRoutes(app, deps);
  registerMarketsRoutes(app, deps);
  registerOrderbookRoutes(app, deps, deps.books ?? cachingBookReader(deps.engine, deps.config.BOOK_CACHE_MB * 2 ** 20));
  registerOrderbookExportRoute(app, deps);
  registerTicksRoutes(app, deps);
  registerOhlcvRoutes(app, deps);
  registerDashboard(app);

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer', description: 'API key from POST /v1/register' });
  app.doc31('/v1/openapi.json', {
    openapi: '3.1.0',
    info: {
      title: 'tickhouse',
      version: '1.0.0',
      description: 'Historical Polymarket order books at any millisecond, raw ticks, OHLCV candles and exports.',
      license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
    },
    servers: [{ url: deps.config.publicUrl }],
  });

  app.notFound((c) => c.json({ detail: { message: `Not found: ${c.req.method} ${c.req.path}` } }, 404));
  app.onError((err, c) => renderError(err, c));
  return app;
}

/** The one place errors become responses (API.md §6). */
function renderError(err: Error, c: Context<AppEnv>) {
  let apiError: ApiError;
  if (err instanceof ApiError) apiError = err;
  else if (err instanceof EngineUnavailableError) apiError = serviceUnavailable('ClickHouse');
  else if (err instanceof HTTPException && err.status === 400) {
    // Hono's JSON body parser: a body that is not JSON.
    apiError = new ApiError('invalid_parameter', 'The request body must be a JSON object.', { param: 'body' });
  } else if (c.req.raw.signal?.aborted) {
    // The client went away (its engine query was cancelled with it): nobody reads this answer.
    log.info('client closed request', { request_id: c.get('requestId'), path: c.req.path });
    return c.body(null, 499 as 400);
  } else {
    const requestId = c.get('requestId');
    log.error('unhandled error', { request_id: requestId, error: err.stack ?? String(err) });
    apiError = new ApiError('internal_error', 'Internal error; quote request_id when reporting it.', { request_id: requestId });
  }
  for (const [name, value] of Object.entries(apiError.headers)) c.header(name, value);
  return c.json(apiError.body(), apiError.status as 400);
}
