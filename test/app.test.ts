import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAccountStore } from '../src/accounts/index.js';
import { createApp } from '../src/app.js';
import { generateApiKey, hashApiKey } from '../src/auth/keys.js';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import type { AppDeps } from '../src/deps.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

let t: TestEngine;
let deps: AppDeps;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  t = await createTestEngine();
  const config = loadConfig({ DATA_DIR: t.dataDir, LOG_LEVEL: 'silent', DEMO_DATA: '0' });
  deps = { config, engine: t.engine, accounts: await openAccountStore(config), clock: new ManualClock(Date.UTC(2026, 5, 1)) };
  app = createApp(deps);
});
afterAll(async () => {
  await deps.accounts.close();
  await t.close();
});

describe('operations', () => {
  it('GET /healthz is 200 and carries a request id', async () => {
    const res = await app.request('/healthz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('echoes the client X-Request-Id', async () => {
    const res = await app.request('/healthz', { headers: { 'X-Request-Id': 'abc-123' } });
    expect(res.headers.get('x-request-id')).toBe('abc-123');
  });

  it('GET /readyz is 200 when ClickHouse and the account store answer', async () => {
    const res = await app.request('/readyz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready', clickhouse: true, account_store: true });
  });

  it('while the demo dataset loads, /readyz says `loading` and /v1/markets says meta.loading; neither once it is in', async () => {
    let loading = true;
    const starting = createApp({ ...deps, loading: () => loading });
    const ready = await starting.request('/readyz');
    expect([ready.status, ready.headers.get('retry-after'), await ready.json()]).toEqual([
      503,
      '1',
      { status: 'loading', clickhouse: true, account_store: true },
    ]);
    const markets = await starting.request('/v1/markets?limit=2');
    expect((await markets.json()).meta).toEqual({ count: 0, offset: 0, limit: 2, total: 0, loading: true });
    loading = false;
    expect([(await starting.request('/readyz')).status, (await (await starting.request('/v1/markets?limit=2')).json()).meta]).toEqual([
      200,
      { count: 0, offset: 0, limit: 2, total: 0 },
    ]);
  });

  it('a flood of /readyz makes one check a second, shared by concurrent callers; a failing check is not reused', async () => {
    let pings = 0;
    let up = true;
    const engine = Object.assign(Object.create(t.engine) as typeof t.engine, { ping: async () => (pings++, up) });
    const clock = new ManualClock(Date.UTC(2026, 5, 1));
    const flooded = createApp({ ...deps, engine, clock });
    const ready = async () => (await flooded.request('/readyz')).status;
    expect(await Promise.all(Array.from({ length: 100 }, ready))).toEqual(Array(100).fill(200));
    expect(await ready()).toBe(200);
    expect(pings).toBe(1);
    clock.advance(1_000);
    up = false;
    expect(await ready()).toBe(503);
    expect(await ready()).toBe(503);
    up = true;
    expect(await ready()).toBe(200);
    expect(pings).toBe(4);
  });

  it('an unknown path is a 404 whose detail holds only a message', async () => {
    const res = await app.request('/v1/nope');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: { message: 'Not found: GET /v1/nope' } });
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('a body over 16 KiB is a 413', async () => {
    const res = await app.request('/v1/register', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Length': String(17 * 1024) },
      body: JSON.stringify({ email: 'a'.repeat(17 * 1024) }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ detail: { error: 'payload_too_large', message: 'Request body is larger than 16 KiB.' } });
  });

  it('GET /metrics speaks the Prometheus text format and counts requests by route', async () => {
    await app.request('/healthz');
    const res = await app.request('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    expect(text).toContain('# TYPE tickhouse_http_requests_total counter');
    expect(text).toMatch(/tickhouse_http_requests_total\{route="\/healthz",method="GET",status="200"\} \d+/);
    expect(text).toContain('# TYPE tickhouse_http_request_duration_seconds histogram');
  });

  it('GET /v1/openapi.json is OpenAPI 3.1 and declares every route of docs/API.md', async () => {
    const res = await app.request('/v1/openapi.json');
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toBe('3.1.0');
    const declared = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(declared.sort()).toEqual(
      expect.arrayContaining([
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
        'POST /v1/register',
        'GET /v1/me',
        'POST /v1/keys/regenerate',
        'GET /v1/billing/status',
        'POST /v1/billing/subscribe',
        'POST /v1/billing/ipn',
        'GET /v1/markets',
        'GET /v1/markets/stats',
        'GET /v1/orderbook',
        'GET /v1/orderbook/range',
        'GET /v1/ticks',
        'GET /v1/ticks/export',
        'GET /v1/ohlcv',
        'GET /v1/price',
        'GET /v1/prices-history',
        'GET /v1/execution-price',
        'GET /v1/coverage',
      ]),
    );
  });
});

describe('daily counter wiring', () => {
  it('every data endpoint counts each request exactly once, /v1/me never', async () => {
    const key = generateApiKey('th_');
    const account = await deps.accounts.createAccount({ email: null, keyHash: hashApiKey(key), plan: 'free', plan_expires_at: null, now: deps.clock.now() });
    const today = new Date(deps.clock.now()).toISOString().slice(0, 10);
    const paths = [
      '/v1/orderbook',
      '/v1/orderbook/range',
      '/v1/ticks',
      '/v1/ticks/export',
      '/v1/ohlcv',
      '/v1/price',
      '/v1/prices-history',
      '/v1/execution-price',
      '/v1/coverage',
    ];
    for (const [i, path] of paths.entries()) {
      // No asset_id: a 400, which counts like any outcome but a 429.
      const res = await app.request(path, { headers: { Authorization: `Bearer ${key}` } });
      expect([path, res.status]).toEqual([path, 400]);
      expect([path, res.headers.get('x-ratelimit-remaining')]).toEqual([path, String(100 - (i + 1))]);
      expect([path, await deps.accounts.getDaily(account.id, today)]).toEqual([path, i + 1]);
    }
    await app.request('/v1/me', { headers: { Authorization: `Bearer ${key}` } });
    expect(await deps.accounts.getDaily(account.id, today)).toBe(paths.length);
  });
});

describe('configuration', () => {
  it('a bad value stops start-up with one line naming the variable', () => {
    const r = spawnSync('node_modules/.bin/tsx', ['src/main.ts'], { env: { ...process.env, PORT: 'eighty' }, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('tickhouse: Invalid configuration: PORT="eighty": Invalid input: expected number, received NaN\n');
  });

  it('parses defaults', () => {
    const c = loadConfig({});
    expect([c.PORT, c.HOST, c.API_KEY_PREFIX, c.DEMO_DATA, c.LOG_LEVEL, c.publicUrl]).toEqual([8080, '0.0.0.0', 'th_', true, 'info', 'http://localhost:8080']);
    expect(() => loadConfig({ REDIS_URL: 'localhost:6379' })).toThrow(
      'Invalid configuration: REDIS_URL="localhost:6379": must start with redis:// or rediss://',
    );
  });

  it('takes a list of Redis URLs only as the seeds of a Redis Cluster', () => {
    const seeds = 'redis://h1:7000,redis://h2:7000';
    expect(loadConfig({ REDIS_URL: seeds, REDIS_CLUSTER: '1' })).toMatchObject({ REDIS_URL: seeds, REDIS_CLUSTER: true });
    expect(loadConfig({ REDIS_URL: 'redis://h1:7000', REDIS_CLUSTER: '1' })).toMatchObject({ REDIS_CLUSTER: true });
    expect(loadConfig({ REDIS_URL: 'redis://h1:6379' })).toMatchObject({ REDIS_CLUSTER: false });
    expect(() => loadConfig({ REDIS_URL: seeds })).toThrow(
      'Invalid configuration: REDIS_URL lists several URLs, which only a Redis Cluster takes (REDIS_CLUSTER=1)',
    );
    expect(() => loadConfig({ REDIS_URL: 'redis://h1:7000,h2:7000', REDIS_CLUSTER: '1' })).toThrow(
      'Invalid configuration: REDIS_URL="redis://h1:7000,h2:7000": must start with redis:// or rediss://',
    );
  });
});
