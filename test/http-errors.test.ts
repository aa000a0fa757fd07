import { OpenAPIHono } from '@hono/zod-openapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountNotFoundError, StoreUnavailableError } from '../src/accounts/errors.js';
import { InvoiceNotFoundError, IpnPayloadError, IpnSignatureError, PaymentProviderError } from '../src/billing/errors.js';
import { EngineUnavailableError } from '../src/clickhouse/errors.js';
import { ManualClock } from '../src/clock.js';
import type { AppEnv } from '../src/http/context.js';
import { renderError, renderNotFound } from '../src/http/render-error.js';
import { type BillingApp, startBillingApp } from './support/billing-app.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

/**
 * Errors the framework raises before a handler runs (wrong Content-Type, JSON that does not parse, a
 * path or method nobody serves) and the domain errors of the stores, billing and the engine: each in
 * the contract's shape (docs/API.md §1, §6) with its exact status, body and headers, and documented as such
 * in /v1/openapi.json. Expected values come from docs/API.md, not from src/.
 */
const clock = new ManualClock(Date.UTC(2026, 5, 24, 12));
let engine: TestEngine;
let b: BillingApp;

beforeAll(async () => {
  engine = await createTestEngine();
  b = await startBillingApp({ engine: engine.engine, clock });
});
afterAll(async () => {
  await b?.close();
  await engine?.close();
});

const subscribe = (key: string, headers: Record<string, string>, body: string) =>
  b.app.request('/v1/billing/subscribe', { method: 'POST', headers: { Authorization: `Bearer ${key}`, ...headers }, body });

describe('framework errors render in the contract shape', () => {
  it.each([
    ['text/plain', { 'Content-Type': 'text/plain' }],
    ['a form (curl -d)', { 'Content-Type': 'application/x-www-form-urlencoded' }],
    ['no Content-Type', {}],
  ])('POST /v1/billing/subscribe with %s: 400 invalid_parameter naming the body, no invoice', async (_label, headers) => {
    const { key } = await b.newAccount();
    const res = await subscribe(key, headers, '{"plan":"monthly"}');
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(await res.json()).toEqual({
      detail: { error: 'invalid_parameter', message: 'The request body must be JSON sent with Content-Type: application/json.', param: 'body' },
    });
    const status = (await (await b.call(key, 'GET', '/v1/billing/status')).json()) as { data: { invoices: unknown[] } };
    expect(status.data.invoices).toEqual([]);
  });

  it('a JSON body that does not parse: 400 invalid_parameter naming the body', async () => {
    const { key } = await b.newAccount();
    const res = await subscribe(key, { 'Content-Type': 'application/json' }, '{"plan":');
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ detail: { error: 'invalid_parameter', message: 'The request body must be a JSON object.', param: 'body' } });
  });

  it('a body over 16 KiB on subscribe: 413 payload_too_large', async () => {
    const { key } = await b.newAccount();
    const res = await subscribe(key, { 'Content-Type': 'application/json' }, JSON.stringify({ plan: 'monthly', pad: 'x'.repeat(17 * 1024) }));
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ detail: { error: 'payload_too_large', message: 'Request body is larger than 16 KiB.' } });
  });

  it.each([
    ['GET', '/v1/nope', false],
    ['GET', '/v1/register', false],
    ['PUT', '/v1/markets', false],
    ['POST', '/healthz', false],
    ['DELETE', '/v1/me', true],
    ['PATCH', '/v1/billing/subscribe', true],
  ])('%s %s (no such path or method): 404 whose detail holds only the message', async (method, path, authenticated) => {
    const { key } = await b.newAccount();
    const res = await b.app.request(path, { method, headers: authenticated ? { Authorization: `Bearer ${key}` } : {} });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(await res.json()).toEqual({ detail: { message: `Not found: ${method} ${path}` } });
  });
});

describe('domain errors map to the API error table (docs/API.md §6)', () => {
  const cases: [string, Error, number, unknown, Record<string, string>][] = [
    [
      'ClickHouse unreachable',
      new EngineUnavailableError('down'),
      503,
      { detail: { error: 'service_unavailable', message: 'ClickHouse is unavailable; retry shortly.' } },
      { 'retry-after': '5' },
    ],
    [
      'account store unreachable',
      new StoreUnavailableError(),
      503,
      { detail: { error: 'service_unavailable', message: 'The account store is unavailable; retry shortly.' } },
      { 'retry-after': '5' },
    ],
    [
      'the account of a key vanished',
      new AccountNotFoundError('a1'),
      401,
      { detail: { error: 'invalid_api_key', message: 'The account of this API key no longer exists.' } },
      {},
    ],
    [
      'payment processor failed',
      new PaymentProviderError('The provider said no; nothing was charged.'),
      502,
      { detail: { error: 'payment_provider_error', message: 'The provider said no; nothing was charged.' } },
      {},
    ],
    ['IPN signature', new IpnSignatureError('bad signature'), 401, { detail: { error: 'invalid_signature', message: 'bad signature' } }, {}],
    [
      'IPN member',
      new IpnPayloadError('payment_status', 'payment_status must be one of …'),
      400,
      { detail: { error: 'invalid_parameter', message: 'payment_status must be one of …', param: 'payment_status' } },
      {},
    ],
    ['IPN invoice unknown', new InvoiceNotFoundError('No invoice matches.'), 404, { detail: { message: 'No invoice matches.' } }, {}],
  ];

  const app = new OpenAPIHono<AppEnv>();
  app.use('*', async (c, next) => {
    c.set('requestId', 'req-1');
    await next();
  });
  cases.forEach(([, error], i) =>
    app.get(`/throw/${i}`, () => {
      throw error;
    }),
  );
  app.get('/bug', () => {
    throw new TypeError('a bug');
  });
  app.notFound(renderNotFound);
  app.onError(renderError);

  it.each(cases.map((c, i) => [c[0], i, c[2], c[3], c[4]] as const))('%s → %i', async (_label, i, status, body, headers) => {
    const res = await app.request(`/throw/${i}`);
    expect(res.status).toBe(status);
    expect(await res.json()).toEqual(body);
    for (const [name, value] of Object.entries(headers)) expect(res.headers.get(name)).toBe(value);
    if (!('retry-after' in headers)) expect(res.headers.get('retry-after')).toBeNull();
  });

  it('anything else is a 500 internal_error naming the request id', async () => {
    const res = await app.request('/bug');
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({
      detail: { error: 'internal_error', message: 'Internal error; quote request_id when reporting it.', request_id: 'req-1' },
    });
  });

  it('a client that went away gets no body (499 in the access log), not a 500', async () => {
    const gone = new AbortController();
    gone.abort();
    const res = await app.request('/bug', { signal: gone.signal });
    expect(res.status).toBe(499);
    expect(await res.text()).toBe('');
  });
});

/** Error statuses each operation can answer, from docs/API.md §2-§6 (every route can also fail with 500). */
const CLOB = '/v1/clob/{key}/at/{instant}';
const EXPECTED_ERRORS: Record<string, number[]> = {
  // Polymarket-compatible routes: Polymarket's `{"error"}` body (docs/TIME-MACHINE.md §2).
  ...Object.fromEntries(
    [
      'book',
      'price',
      'midpoint',
      'spread',
      'last-trade-price',
      'tick-size',
      'neg-risk',
      'fee-rate',
      'clob-markets/{condition_id}',
      'markets-by-token/{token_id}',
    ].map((p) => [`GET ${CLOB}/${p}`, [400, 401, 403, 404, 429, 500, 503]]),
  ),
  [`GET ${CLOB}/prices-history`]: [400, 401, 403, 429, 500, 503],
  'GET /v1/kalshi/{key}/at/{instant}/trade-api/v2/markets/{ticker}/orderbook': [400, 401, 403, 404, 429, 500, 503],
  // A market without trades then is an empty list, never a 404.
  'GET /v1/kalshi/{key}/at/{instant}/trade-api/v2/markets/trades': [400, 401, 403, 429, 500, 503],
  // Batches: a token without a book is left out of the answer, never a 404; a body over 128 KiB is a 413.
  ...Object.fromEntries(
    ['books', 'prices', 'midpoints', 'spreads', 'last-trades-prices'].map((p) => [`POST ${CLOB}/${p}`, [400, 401, 403, 413, 429, 500, 503]]),
  ),
  'POST /v1/register': [400, 413, 429, 500, 503],
  'GET /v1/me': [401, 500, 503],
  'POST /v1/keys/regenerate': [401, 413, 500, 503],
  'GET /v1/billing/status': [401, 500, 503],
  'POST /v1/billing/subscribe': [400, 401, 413, 500, 502, 503],
  'POST /v1/billing/ipn': [400, 401, 404, 413, 500, 503],
  'GET /v1/markets': [400, 500, 503],
  'GET /v1/markets/stats': [500, 503],
  'GET /v1/orderbook': [400, 401, 403, 404, 429, 500, 503],
  'GET /v1/orderbook/range': [400, 401, 403, 429, 500, 503],
  'GET /v1/ticks': [400, 401, 403, 429, 500, 503],
  'GET /v1/coverage': [400, 401, 403, 429, 500, 503],
  'GET /v1/orderbook/export': [400, 401, 403, 429, 500, 503],
  'GET /v1/replay/market': [400, 401, 403, 426, 429, 500, 503],
  'GET /v1/ticks/export': [400, 401, 403, 429, 500, 503],
  'GET /v1/ohlcv': [400, 401, 403, 429, 500, 503],
  'GET /v1/price': [400, 401, 403, 404, 429, 500, 503],
  'GET /v1/prices-history': [400, 401, 403, 429, 500, 503],
  'GET /v1/execution-price': [400, 401, 403, 404, 429, 500, 503],
  'GET /v1/instruments': [400, 401, 403, 404, 429, 500, 503],
  // Never a 404 for a day or a slice without data (docs/TARDIS.md): Tardis's clients take 404 as final.
  'GET /v1/tardis/datasets/{exchange}/{data_type}/{year}/{month}/{day}/{file}': [400, 401, 403, 429, 500, 503],
  'GET /v1/tardis/data-feeds/{exchange}': [400, 401, 403, 429, 500, 503],
};

interface Operation {
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
}

describe('/v1/openapi.json documents every error body', () => {
  let doc: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };
  beforeAll(async () => {
    doc = (await (await b.app.request('/v1/openapi.json')).json()) as typeof doc;
  });

  it('the Error and NotFound bodies are the shapes of docs/API.md §6', () => {
    expect(doc.components.schemas.Error).toMatchObject({
      type: 'object',
      required: ['detail'],
      properties: { detail: { type: 'object', required: ['error', 'message'], properties: { error: { type: 'string' }, message: { type: 'string' } } } },
    });
    expect(doc.components.schemas.NotFound).toEqual({
      type: 'object',
      required: ['detail'],
      properties: { detail: { type: 'object', required: ['message'], properties: { message: { type: 'string' } } } },
    });
  });

  it('every /v1 operation lists exactly the error statuses it can answer, each with its JSON body', () => {
    const operations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/v1/') && path !== '/v1/openapi.json')
      .flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op] as const));
    expect(operations.map(([name]) => name).sort()).toEqual(Object.keys(EXPECTED_ERRORS).sort());
    for (const [name, op] of operations) {
      const errors = Object.keys(op.responses)
        .map(Number)
        .filter((s) => s >= 400);
      expect(errors.sort(), name).toEqual(EXPECTED_ERRORS[name]);
      for (const status of errors) {
        const schema = name.includes('/v1/kalshi/') ? 'KalshiError' : name.includes('/v1/clob/') ? 'PolymarketError' : status === 404 ? 'NotFound' : 'Error';
        expect(op.responses[status].content, `${name} ${status}`).toEqual({ 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } });
      }
    }
  });
});
