import { OpenAPIHono } from '@hono/zod-openapi';
import { bodyLimit } from 'hono/body-limit';
import { HeavySlots, heavyRequests } from './auth/heavy-requests.js';
import { dailyLimit, requireAuth } from './auth/middleware.js';
import { withCacheMetrics } from './book-history/cache-metrics.js';
import { cachingBookReader } from './book-history/reader.js';
import { registerDashboard } from './dashboard/serve.js';
import type { AppDeps } from './deps.js';
import type { AppEnv } from './http/context.js';
import { SEMANTICS_DESCRIPTION } from './http/data-semantics.js';
import { ApiError } from './http/errors.js';
import { accessLog, bearerChallenge, requestId } from './http/middleware.js';
import { renderError, renderNotFound } from './http/render-error.js';
import { setLogLevel } from './log.js';
import { MCP_PATH, registerMcpRoutes } from './mcp/http-route.js';
import { ReplayServer } from './replay/server.js';
import { registerAccountsRoutes } from './routes/accounts.js';
import { registerBillingRoutes } from './routes/billing.js';
import { registerClobRoutes } from './routes/clob.js';
import { registerCoverageRoutes } from './routes/coverage.js';
import { registerHealthRoutes } from './routes/health.js';
import { registerInstrumentsRoutes } from './routes/instruments.js';
import { registerKalshiRoutes } from './routes/kalshi.js';
import { registerMarketsRoutes } from './routes/markets.js';
import { registerOhlcvRoutes } from './routes/ohlcv.js';
import { registerOrderbookRoutes } from './routes/orderbook.js';
import { registerOrderbookExportRoute } from './routes/orderbook-export.js';
import { registerReplayRoutes } from './routes/replay.js';
import { registerTardisDataFeedsRoute } from './routes/tardis-data-feeds.js';
import { registerTardisDatasetsRoute } from './routes/tardis-datasets.js';
import { registerTicksRoutes } from './routes/ticks.js';

/**
 * Paths whose every authenticated request counts toward the daily limit (docs/API.md §2). A Hono
 * pattern `/x/*` also matches `/x` itself, so listing both would run the middleware twice.
 */
export const DATA_PATHS = [
  '/v1/orderbook/*',
  '/v1/ticks/*',
  '/v1/ohlcv',
  '/v1/price',
  '/v1/prices-history',
  '/v1/execution-price',
  '/v1/coverage',
  '/v1/instruments',
  '/v1/tardis/*',
];
/** The replay WebSocket's handshake: counted like DATA_PATHS, authenticated by header or `key`. */
export const REPLAY_PATH = '/v1/replay/market';
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
  useMiddleware(app, deps);
  const { replay, books } = registerRoutes(app, deps);
  registerDocument(app, deps);
  app.notFound(renderNotFound);
  app.onError(renderError);
  // main.ts gives the replay the HTTP server's upgrade requests (`app.replay.listen(server)`) and stops
  // `app.books` (a cache fill in the background) before it closes the engine.
  return Object.assign(app, { replay, books });
}

/** Request ids, the access log, body limits, and on each path its key, heavy-request slot and daily count, in that order. */
function useMiddleware(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.use('*', requestId(), accessLog(), bearerChallenge());
  const limitBody = bodyLimit({
    maxSize: 16 * 1024,
    onError: () => {
      throw new ApiError('payload_too_large', 'Request body is larger than 16 KiB.');
    },
  });
  // GET and HEAD carry no body. Skipping them matters: bodyLimit reads `c.req.raw.body`, which makes
  // the Node adapter build a full fetch Request for every data request (~0.1 ms of CPU each).
  // The Polymarket-compatible routes set their own limit (POST /books carries up to 500 token ids);
  // Kalshi's twin reads no body (GET only: anything else is its 404, in Kalshi's shape).
  app.use('/v1/*', (c, next) =>
    c.req.method === 'GET' || c.req.method === 'HEAD' || c.req.path.startsWith('/v1/clob/') || c.req.path.startsWith('/v1/kalshi/')
      ? next()
      : limitBody(c, next),
  );
  const auth = requireAuth(deps);
  const counted = dailyLimit(deps);
  // Exports, Tardis files and replays take one of the plan's concurrent slots before they are counted.
  const heavy = heavyRequests(new HeavySlots(deps.accounts));
  for (const path of DATA_PATHS) app.use(path, auth, heavy, counted);
  // The replay WebSocket also takes the key as a query parameter (many WebSocket clients cannot set headers).
  app.use(REPLAY_PATH, requireAuth(deps, { queryKey: true }), heavy, counted);
  for (const path of ACCOUNT_PATHS) app.use(path, auth);
  // MCP counts each tool call, not each HTTP request (routes/mcp.ts); a message is small.
  app.use(MCP_PATH, limitBody, auth);
}

/** One register call per resource, in the order /v1/openapi.json lists them; the replay server and the book reader they share. */
function registerRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps) {
  registerHealthRoutes(app, deps);
  registerAccountsRoutes(app, deps);
  registerBillingRoutes(app, deps);
  registerMarketsRoutes(app, deps);
  // One BookReader for every point-in-time book: order books, CLOB answers, the replay's initial books.
  const books = deps.books ?? withCacheMetrics(cachingBookReader(deps.engine, deps.config.BOOK_CACHE_MB * 2 ** 20));
  registerOrderbookRoutes(app, deps, books);
  registerClobRoutes(app, deps, books);
  registerKalshiRoutes(app, deps, books);
  const replay = new ReplayServer({ engine: deps.engine, books, fetch: (request, env) => app.fetch(request, env) });
  registerReplayRoutes(app, replay);
  registerOrderbookExportRoute(app, deps);
  registerTicksRoutes(app, deps);
  registerOhlcvRoutes(app, deps);
  registerCoverageRoutes(app, deps);
  registerInstrumentsRoutes(app, deps);
  registerMcpRoutes(app, deps, books);
  registerTardisDatasetsRoute(app, deps);
  registerTardisDataFeedsRoute(app, deps);
  registerDashboard(app);
  return { replay, books };
}

/** /v1/openapi.json: the routes' schemas, the bearer scheme and the data semantics. */
function registerDocument(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer', description: 'API key from POST /v1/register' });
  app.doc31('/v1/openapi.json', {
    openapi: '3.1.0',
    info: {
      title: 'tickhouse',
      version: '1.0.0',
      description: `Historical Polymarket order books at any millisecond, raw ticks, OHLCV candles and exports.\n\n${SEMANTICS_DESCRIPTION}`,
      license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
    },
    servers: [{ url: deps.config.publicUrl }],
  });
}
