import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { type AccountApp, startAccountApp } from './support/account-app.js';
import { describeEachStore } from './support/account-stores.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

const DAY = 86_400_000;
// 2026-06-24 15:30:00 UTC; the next UTC midnight is 2026-06-25T00:00:00Z = 1782345600 s.
const NOW = Date.UTC(2026, 5, 24, 15, 30, 0);
const NEXT_MIDNIGHT_S = Date.UTC(2026, 5, 25) / 1000;

let engine: TestEngine;
beforeAll(async () => {
  engine = await createTestEngine();
});
afterAll(async () => {
  await engine?.close();
});

describeEachStore('daily limit on the %s store', ({ redisUrl, redisCluster }) => {
  let t: AccountApp;
  let clock: ManualClock;
  beforeAll(async () => {
    clock = new ManualClock(NOW);
    t = await startAccountApp({ engine: engine.engine, clock, redisUrl, redisCluster });
  });
  afterAll(async () => {
    await t?.close();
  });

  const me = async (key: string) => (await (await t.call(key, '/v1/me')).json()).data;

  it('free: requests 1-100 pass with X-RateLimit-*, the 101st is the 429 and does not count', async () => {
    clock.set(NOW);
    const { key } = await t.newAccount();
    for (let i = 1; i <= 100; i++) {
      const res = await t.call(key, '/v1/orderbook/__probe');
      expect(res.status, `request ${i}`).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('100');
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(100 - i));
      expect(res.headers.get('x-ratelimit-reset')).toBe(String(NEXT_MIDNIGHT_S));
      expect(res.headers.get('retry-after')).toBeNull();
    }
    const refused = await t.call(key, '/v1/orderbook/__probe');
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      detail: { error: 'rate_limit_exceeded', message: 'Daily request limit (100) exceeded.', limit: 100, plan: 'free' },
    });
    expect(refused.headers.get('retry-after')).toBe(String(8.5 * 3600));
    expect(refused.headers.get('x-ratelimit-limit')).toBe('100');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('x-ratelimit-reset')).toBe(String(NEXT_MIDNIGHT_S));
    expect(refused.headers.get('x-request-id')).toBeTruthy();
    // Refused requests never count; /v1/me never counts either.
    clock.advance(1000);
    expect((await t.call(key, '/v1/orderbook/__probe')).headers.get('retry-after')).toBe(String(8.5 * 3600 - 1));
    expect((await me(key)).requests_today).toBe(100);
    expect((await me(key)).requests_today).toBe(100);
  });

  it('requests_today is exact after N requests, counting failures and unknown data paths, not account routes', async () => {
    clock.set(NOW);
    const { key } = await t.newAccount();
    expect((await me(key)).requests_today).toBe(0);
    for (let i = 0; i < 4; i++) expect((await t.call(key, '/v1/orderbook/__probe')).status).toBe(200);
    const failed = await t.call(key, '/v1/orderbook/__fail');
    expect(failed.status).toBe(400);
    expect(await failed.json()).toEqual({ detail: { error: 'invalid_parameter', message: 'limit must be an integer between 1 and 100', param: 'limit' } });
    expect(failed.headers.get('x-ratelimit-remaining')).toBe('95');
    expect(failed.headers.get('x-ratelimit-limit')).toBe('100');
    const denied = await t.call(key, `/v1/orderbook/__probe?start=${NOW - DAY}`);
    expect(denied.status).toBe(403);
    expect(denied.headers.get('x-ratelimit-remaining')).toBe('94');
    const missing = await t.call(key, '/v1/orderbook/__nothing_here');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-ratelimit-remaining')).toBe('93');
    await t.call(key, '/v1/keys/regenerate', { method: 'GET' });
    // An unauthenticated or wrong-key request counts for nobody.
    expect((await t.call(null, '/v1/orderbook/__probe')).status).toBe(401);
    expect((await me(key)).requests_today).toBe(7);
  });

  it('resets at 00:00 UTC', async () => {
    clock.set(Date.UTC(2026, 5, 24, 23, 59, 59, 999));
    const { key } = await t.newAccount();
    for (let i = 0; i < 100; i++) await t.call(key, '/v1/orderbook/__probe');
    const last = await t.call(key, '/v1/orderbook/__probe');
    expect(last.status).toBe(429);
    expect(last.headers.get('retry-after')).toBe('1');
    clock.advance(1);
    expect((await me(key)).requests_today).toBe(0);
    const next = await t.call(key, '/v1/orderbook/__probe');
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-remaining')).toBe('99');
    expect(next.headers.get('x-ratelimit-reset')).toBe(String(Date.UTC(2026, 5, 26) / 1000));
    expect((await me(key)).requests_today).toBe(1);
  });

  it('a paid plan has its own limit; after expiry the limits are free’s while plan keeps its name', async () => {
    const expires = Date.UTC(2026, 5, 24, 18, 0, 0);
    clock.set(NOW);
    const { key } = await t.newAccount('daily', expires);
    for (let i = 0; i < 150; i++) expect((await t.call(key, '/v1/orderbook/__probe')).status).toBe(200);
    const paid = await t.call(key, '/v1/orderbook/__probe');
    expect(paid.headers.get('x-ratelimit-limit')).toBe('1000');
    expect(paid.headers.get('x-ratelimit-remaining')).toBe('849');
    expect(await me(key)).toMatchObject({
      plan: 'daily',
      plan_active: true,
      plan_expires_at: '2026-06-24T18:00:00+00:00',
      data_access_days: 7,
      rate_limit_daily: 1000,
      requests_today: 151,
    });

    clock.set(expires - 1);
    expect((await me(key)).plan_active).toBe(true);
    clock.set(expires);
    expect(await me(key)).toMatchObject({
      plan: 'daily',
      plan_active: false,
      plan_expires_at: '2026-06-24T18:00:00+00:00',
      data_access_days: 0,
      rate_limit_daily: 100,
      requests_today: 151,
    });
    const refused = await t.call(key, '/v1/orderbook/__probe');
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      detail: { error: 'rate_limit_exceeded', message: 'Daily request limit (100) exceeded.', limit: 100, plan: 'daily' },
    });
    expect(refused.headers.get('x-ratelimit-limit')).toBe('100');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
  });
});
