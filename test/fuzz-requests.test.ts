import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from '../src/auth/keys.js';
import { ManualClock } from '../src/clock.js';
import { replayLines } from '../src/ingest/frame-files.js';
import { type BillingApp, startBillingApp } from './support/billing-app.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

/**
 * Property-based abuse of every endpoint (fast-check): thousands of generated requests with broken
 * parameters, headers, content types, bodies and nesting. Whatever comes in, the service answers
 * below 500, with an X-Request-Id, and every error in the contract's shape (docs/API.md §6).
 */
const RUNS = 2_500;
const NOW = Date.UTC(2026, 5, 25, 12, 0, 0);
const ASSET = '4242';

/** docs/API.md §6 and docs/BILLING.md, written from the specs: code → status, and the members `detail` must carry. */
const ERROR_CODES: Record<string, { status: number; extra: string[] }> = {
  invalid_parameter: { status: 400, extra: ['param'] },
  invalid_api_key: { status: 401, extra: [] },
  invalid_signature: { status: 401, extra: [] },
  data_access_denied: { status: 403, extra: ['plan', 'earliest_allowed'] },
  payload_too_large: { status: 413, extra: [] },
  // docs/MCP.md §1: the MCP endpoint keeps no session, so GET and DELETE have nothing to serve.
  method_not_allowed: { status: 405, extra: [] },
  rate_limit_exceeded: { status: 429, extra: ['limit', 'plan'] },
  too_many_registrations: { status: 429, extra: ['limit'] },
  // docs/API.md §2: the plan's heavy requests (exports, Tardis files and slices, replays) all running.
  too_many_concurrent_requests: { status: 429, extra: ['limit', 'plan'] },
  payment_provider_error: { status: 502, extra: [] },
  service_unavailable: { status: 503, extra: [] },
  payments_unavailable: { status: 503, extra: [] },
  // docs/TIME-MACHINE.md §1 is silent on a plain request to the replay WebSocket; README: 426.
  upgrade_required: { status: 426, extra: [] },
};

let engine: TestEngine;
let b: BillingApp;
let paths: { method: string; path: string; params: string[] }[];
const keys = { unlimited: '', free: '' };

beforeAll(async () => {
  engine = await createTestEngine();
  const clock = new ManualClock(NOW);
  b = await startBillingApp({ engine: engine.engine, clock });
  for (const plan of ['unlimited', 'free'] as const) {
    const key = generateApiKey('th_');
    await b.accounts.createAccount({ email: null, keyHash: hashApiKey(key), plan, plan_expires_at: plan === 'free' ? null : NOW + 86_400_000, now: NOW });
    keys[plan] = key;
  }
  // A book and a few ticks, so well-formed parts of a request reach the engine and succeed.
  const frame = (t: number, extra: object) => JSON.stringify({ asset_id: ASSET, market: '0xm', timestamp: String(t), hash: 'h', ...extra });
  await replayLines(
    engine.engine,
    [
      frame(NOW - 3_600_000, { event_type: 'book', bids: [{ price: '0.4', size: '10' }], asks: [{ price: '0.6', size: '5' }] }),
      frame(NOW - 1_800_000, { event_type: 'price_change', price: '0.45', side: 'BUY', size: '3' }),
      frame(NOW - 900_000, { event_type: 'last_trade_price', price: '0.6', side: 'BUY', size: '1' }),
    ],
    { sourceId: 'fuzz' },
  );
  const doc = (await (await b.app.request('/v1/openapi.json')).json()) as { paths: Record<string, Record<string, { parameters?: { name: string }[] }>> };
  paths = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, params: (op.parameters ?? []).map((p) => p.name) })),
  );
  // Outside the OpenAPI document: the dashboard and its assets.
  paths.push({ method: 'GET', path: '/', params: [] }, { method: 'GET', path: '/assets/{name}', params: [] });
}, 60_000);

afterAll(async () => {
  await b?.close();
  await engine?.close();
});

/** Values that break parsers: signs, exponents, huge, fractional, empty, control and non-ASCII, encodings. */
const nastyText = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '0',
    '-1',
    '1e308',
    '1e-320',
    '5e-324',
    'NaN',
    'Infinity',
    '-0',
    '0x10',
    '1_000',
    '9'.repeat(400),
    '1.5',
    '.',
    'null',
    'true',
    '[]',
    '{}',
    '%',
    '%zz',
    '%00',
    '%C0%AF',
    '\u0000',
    '\uD800',
    '😀',
    '../../etc/passwd',
    "' OR 1=1 --",
    '{{7*7}}',
    'BUY',
    'SELL',
    'csv',
    'parquet',
    '1h',
    ASSET,
    String(NOW),
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer().map(String),
  fc.double().map(String),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String),
);

/** A query string: known parameters (some repeated), unknown ones, raw bytes that are not valid encodings. */
const queryOf = (params: string[]) =>
  fc
    .tuple(
      fc.array(fc.tuple(fc.constantFrom(...params, 'asset_id', 'cursor', 'limit', 'x'), nastyText), { maxLength: 6 }),
      fc.constantFrom('', '&', '&&=&', '&%', '&a=%E0%A4%A', '&limit', '&=1', `&asset_id=${ASSET}`, `&start=${NOW - 60_000}&end=${NOW}`),
    )
    .map(([pairs, raw]) => new URLSearchParams(pairs).toString() + raw);

const pathOf = fc
  .tuple(
    fc.nat(),
    nastyText,
    fc.oneof(
      { weight: 4, arbitrary: fc.constant('') },
      { weight: 1, arbitrary: fc.constantFrom('/', '//', '/x', '%2F..', '%zz', '%', '.json', '?', '#frag', ';a=1') },
    ),
  )
  .map(([i, id, suffix]) => {
    const route = paths[i % paths.length];
    const filled = route.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(id.replace(/[\uD800-\uDFFF]/g, '?')) || 'x');
    return { route, path: filled + suffix };
  });

const contentType = fc.constantFrom(
  undefined,
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'application/x-www-form-urlencoded',
  'text/plain',
  'multipart/form-data; boundary=x',
  'multipart/form-data',
  'application/xml',
  'application/octet-stream',
  'application/vnd.api+json',
  '*/*',
  'garbage',
  '',
);

/** Arrays or objects nested `depth` levels around a value, kept under the 16 KiB body limit or just over it. */
const nested = fc
  .tuple(fc.integer({ min: 1, max: 9_000 }), fc.boolean())
  .map(([depth, arrays]) =>
    arrays ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(Math.min(depth, 3_000))}1${'}'.repeat(Math.min(depth, 3_000))}`,
  );

const body = fc.oneof(
  fc.constant(undefined),
  fc.json({ maxDepth: 4 }),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ plan: v, email: v, payment_status: v, invoice_id: v, order_id: v })),
  fc.constantFrom(
    '{"plan":"monthly"}',
    '{"plan":"free"}',
    '{"email":"a@b.c"}',
    '{"email":"not an email"}',
    '{',
    '}',
    'null',
    '[]',
    '""',
    'plan=monthly',
    '\u0000',
    '{"__proto__":{"x":1}}',
    '{"constructor":{"prototype":{}}}',
  ),
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  nested.map((n) => `{"plan":${n}}`),
  nested,
  fc.integer({ min: 16_000, max: 20_000 }).map((n) => JSON.stringify({ email: 'a'.repeat(n) })),
);

const authorization = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.constantFrom(undefined, '', 'Bearer', 'Bearer ', 'Basic Zm9vOmJhcg==', 'Bearer th_live_short', `Bearer ${'A'.repeat(5_000)}`, 'bearer  x y'),
  },
  // Mostly a valid key, so the request gets past authentication to the parameters and the body.
  { weight: 4, arbitrary: fc.constantFrom('unlimited', 'free').map((plan) => () => `Bearer ${keys[plan as keyof typeof keys]}`) },
  { weight: 1, arbitrary: nastyText.map((t) => `Bearer ${t}`) },
);

const request = fc
  .record({
    target: pathOf,
    // Mostly the route's own method.
    method: fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS') },
    ),
    authorization,
    contentType,
    body,
    accept: fc.constantFrom(undefined, 'application/json', 'text/html', '*/*', 'garbage'),
    acceptEncoding: fc.constantFrom(undefined, 'gzip', 'zstd', 'br', 'identity', 'gzip;q=0, *;q=0', 'x'.repeat(300)),
    requestId: fc.oneof(fc.constant(undefined), nastyText, fc.constant('x'.repeat(200))),
    forwardedFor: fc.oneof(fc.constant(undefined), nastyText),
    signature: fc.oneof(fc.constant(undefined), nastyText, fc.constant('ab'.repeat(64))),
  })
  .chain((r) => queryOf(r.target.route.params).map((rawQuery) => ({ ...r, rawQuery })));

/** Header values a Fetch `Headers` accepts (it refuses control characters and non-Latin-1). */
const headerSafe = (value: string) => value.replace(/[^\x20-\x7e]/g, '?');

describe('fuzz: malformed requests on every endpoint', () => {
  it(`${RUNS} generated requests: never a 5xx, always X-Request-Id, errors in the contract's shape`, { timeout: 600_000 }, async () => {
    const hit = new Set<string>();
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const method = r.method ?? r.target.route.method;
        const headers: Record<string, string> = {};
        const auth = typeof r.authorization === 'function' ? r.authorization() : r.authorization;
        if (auth !== undefined) headers.Authorization = headerSafe(auth);
        if (r.contentType !== undefined) headers['Content-Type'] = r.contentType;
        if (r.accept) headers.Accept = r.accept;
        if (r.acceptEncoding) headers['Accept-Encoding'] = r.acceptEncoding;
        if (r.requestId !== undefined) headers['X-Request-Id'] = headerSafe(r.requestId);
        if (r.forwardedFor !== undefined) headers['X-Forwarded-For'] = headerSafe(r.forwardedFor);
        if (r.signature !== undefined) headers['x-nowpayments-sig'] = headerSafe(r.signature);
        const withBody = r.body !== undefined && method !== 'GET' && method !== 'HEAD';
        const url = `http://tickhouse.test${r.target.path}${r.target.path.includes('?') ? '&' : '?'}${r.rawQuery}`;
        const res = await b.app.request(url, { method, headers, body: withBody ? r.body : undefined });
        sent++;
        hit.add(`${r.target.route.method} ${r.target.route.path}`);
        const text = await res.text();
        const what =
          `${method} ${url} ${JSON.stringify(headers)} body=${JSON.stringify(withBody ? r.body?.slice(0, 300) : null)} → ${res.status} ` +
          `${text.slice(0, 300)}`;

        expect(res.status, what).toBeLessThan(500);
        expect(res.headers.get('X-Request-Id'), what).toMatch(/^[\w.:-]{1,128}$/);
        // A regenerated key replaces the one the generator hands out.
        if (r.target.route.path === '/v1/keys/regenerate' && res.status === 200) {
          const plan = auth === `Bearer ${keys.free}` ? 'free' : 'unlimited';
          keys[plan] = (JSON.parse(text) as { data: { api_key: string } }).data.api_key;
        }
        if (res.status < 400 || method === 'HEAD') return;
        expect(res.headers.get('Content-Type'), what).toMatch(/^application\/json/);
        // Anything that looks like the CLOB base, routed or not ("/v1/clob/./at/./book", "//v1/clob/…").
        if (/^\/+v1\/+clob(\/|$)/i.test(new URL(url).pathname)) {
          // docs/TIME-MACHINE.md §2: Polymarket's own error shape and statuses.
          expect(Object.keys(JSON.parse(text)), what).toEqual(['error']);
          expect([400, 401, 403, 404, 413, 429, 503], what).toContain(res.status);
          return;
        }
        if (/^\/+v1\/+kalshi(\/|$)/i.test(new URL(url).pathname)) {
          // docs/KALSHI.md §5: Kalshi's error shape, a contract error code with its status.
          const error = (JSON.parse(text) as { error: Record<string, unknown> }).error;
          expect(Object.keys(error).sort(), what).toEqual(['code', 'message', 'service']);
          if (res.status === 404) expect(error.code, what).toBe('not_found');
          else expect(ERROR_CODES[error.code as string]?.status, what).toBe(res.status);
          return;
        }
        const detail = (JSON.parse(text) as { detail: Record<string, unknown> }).detail;
        if (res.status === 404) {
          expect(Object.keys(detail), what).toEqual(['message']);
          expect(detail.message, what).toEqual(expect.any(String));
          return;
        }
        const code = ERROR_CODES[detail.error as string];
        expect(code, what).toBeDefined();
        expect(res.status, what).toBe(code.status);
        expect(detail.message, what).toEqual(expect.any(String));
        for (const member of code.extra) expect(detail, what).toHaveProperty(member);
        if (res.status === 401) expect(res.headers.get('WWW-Authenticate'), what).toBe('Bearer');
      }),
      // A new seed each run widens the search; a failure prints its seed (FUZZ_SEED=<seed> replays it).
      { numRuns: RUNS, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
    );
    expect(sent).toBeGreaterThanOrEqual(2_000);
    expect([...hit].sort()).toEqual(paths.map((p) => `${p.method} ${p.path}`).sort());
  });
});
