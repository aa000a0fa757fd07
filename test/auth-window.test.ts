import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectivePlan } from '../src/accounts/effective-plan.js';
import { expiryAfterPurchase } from '../src/accounts/plan-change.js';
import { earliestAllowed } from '../src/auth/history-window.js';
import { ManualClock } from '../src/clock.js';
import { isoUtc } from '../src/time.js';
import { type AccountApp, startAccountApp } from './support/account-app.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 5, 24, 15, 30, 0);
const TODAY = Date.UTC(2026, 5, 24);

let engine: TestEngine;
let t: AccountApp;
let clock: ManualClock;
beforeAll(async () => {
  engine = await createTestEngine();
  clock = new ManualClock(NOW);
  t = await startAccountApp({ engine: engine.engine, clock });
});
afterAll(async () => {
  await t?.close();
  await engine?.close();
});

const probe = (key: string, start?: number) => t.call(key, `/v1/orderbook/__probe${start === undefined ? '' : `?start=${start}`}`);
const me = async (key: string) => (await (await t.call(key, '/v1/me')).json()).data;

describe('history window', () => {
  it('earliest_allowed is 00:00 UTC of today − data_access_days', () => {
    expect(earliestAllowed(0, NOW)).toBe(TODAY);
    expect(earliestAllowed(7, NOW)).toBe(TODAY - 7 * DAY);
    expect(earliestAllowed(30, TODAY)).toBe(TODAY - 30 * DAY);
    expect(earliestAllowed(0, TODAY - 1)).toBe(TODAY - DAY);
    expect(isoUtc(earliestAllowed(3650, NOW))).toBe('2016-06-26T00:00:00+00:00');
  });

  it('free: a start exactly at today 00:00 UTC passes, 1 ms earlier is 403', async () => {
    clock.set(NOW);
    const { key } = await t.newAccount();
    const ok = await probe(key, TODAY);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ earliest_allowed: TODAY });
    const denied = await probe(key, TODAY - 1);
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({
      detail: {
        error: 'data_access_denied',
        message: 'Your plan (free) only allows access to the last 0 day(s) of data.',
        plan: 'free',
        earliest_allowed: '2026-06-24T00:00:00+00:00',
      },
    });
    // No explicit time: the route gets the window start to clamp to.
    expect(await (await probe(key)).json()).toEqual({ earliest_allowed: TODAY });
  });

  it('monthly: 30 days back; the window moves at UTC midnight', async () => {
    clock.set(NOW);
    const { key } = await t.newAccount('monthly', NOW + 30 * DAY);
    expect((await probe(key, TODAY - 30 * DAY)).status).toBe(200);
    const denied = await probe(key, TODAY - 30 * DAY - 1);
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({
      detail: {
        error: 'data_access_denied',
        message: 'Your plan (monthly) only allows access to the last 30 day(s) of data.',
        plan: 'monthly',
        earliest_allowed: '2026-05-25T00:00:00+00:00',
      },
    });
    clock.set(TODAY + DAY);
    expect((await probe(key, TODAY - 30 * DAY)).status).toBe(403);
    expect((await probe(key, TODAY - 29 * DAY)).status).toBe(200);
  });

  it('an expired plan reads like free but keeps its name in the 403', async () => {
    clock.set(NOW);
    const { key } = await t.newAccount('unlimited', NOW + 60_000);
    expect((await probe(key, TODAY - 3000 * DAY)).status).toBe(200);
    clock.set(NOW + 60_000);
    const denied = await probe(key, TODAY - 1);
    expect(await denied.json()).toEqual({
      detail: {
        error: 'data_access_denied',
        message: 'Your plan (unlimited) only allows access to the last 0 day(s) of data.',
        plan: 'unlimited',
        earliest_allowed: '2026-06-24T00:00:00+00:00',
      },
    });
    expect(await me(key)).toEqual({
      id: expect.any(String),
      email: null,
      plan: 'unlimited',
      plan_active: false,
      plan_expires_at: '2026-06-24T15:31:00+00:00',
      data_access_days: 0,
      rate_limit_daily: 100,
      requests_today: 2,
    });
  });
});

describe('expiry and renewal', () => {
  it('effective plan: active until plan_expires_at (exclusive), free never expires', () => {
    expect(effectivePlan({ plan: 'free', plan_expires_at: null }, NOW)).toEqual({
      plan: 'free',
      active: true,
      data_access_days: 0,
      rate_limit_daily: 100,
      concurrent_heavy: 1,
    });
    expect(effectivePlan({ plan: 'monthly', plan_expires_at: NOW + 1 }, NOW)).toEqual({
      plan: 'monthly',
      active: true,
      data_access_days: 30,
      rate_limit_daily: 50_000,
      concurrent_heavy: 4,
    });
    expect(effectivePlan({ plan: 'monthly', plan_expires_at: NOW }, NOW)).toEqual({
      plan: 'monthly',
      active: false,
      data_access_days: 0,
      rate_limit_daily: 100,
      concurrent_heavy: 1,
    });
  });

  it('paying for the active plan extends from its expiry; another plan or a lapsed one starts now', () => {
    const active = { plan: 'monthly' as const, plan_expires_at: NOW + 5 * DAY };
    expect(expiryAfterPurchase(active, 'monthly', NOW)).toBe(NOW + 35 * DAY);
    expect(expiryAfterPurchase(active, 'unlimited', NOW)).toBe(NOW + 30 * DAY);
    expect(expiryAfterPurchase(active, 'daily', NOW)).toBe(NOW + DAY);
    expect(expiryAfterPurchase({ plan: 'monthly', plan_expires_at: NOW - 1 }, 'monthly', NOW)).toBe(NOW + 30 * DAY);
    expect(expiryAfterPurchase({ plan: 'free', plan_expires_at: null }, 'daily', NOW)).toBe(NOW + DAY);
    // Expiries are whole seconds, rounded up, so the ISO text the API prints is exact.
    expect(expiryAfterPurchase({ plan: 'free', plan_expires_at: null }, 'daily', NOW + 1)).toBe(NOW + DAY + 1000);
    expect(isoUtc(NOW + DAY + 1000)).toBe('2026-06-25T15:30:01+00:00');
  });

  it('a purchase shows in /v1/me at once (the lookup cache is invalidated) and renews from expiry', async () => {
    clock.set(NOW);
    const { id, key } = await t.newAccount();
    expect((await me(key)).plan).toBe('free');
    // A paid invoice of plan daily, as the IPN handler applies it.
    const buy = (accountId: string, paymentId: string) =>
      t.accounts.applyPaidInvoice({ payment_id: paymentId, account_id: accountId, plan: 'daily' }, clock.now(), (a) =>
        expiryAfterPurchase(a, 'daily', clock.now()),
      );
    await buy(id, `${id}-1`);
    expect(await me(key)).toMatchObject({
      plan: 'daily',
      plan_active: true,
      plan_expires_at: '2026-06-25T15:30:00+00:00',
      data_access_days: 7,
      rate_limit_daily: 1000,
    });
    clock.set(NOW + 3_600_000);
    await buy(id, `${id}-2`);
    expect((await me(key)).plan_expires_at).toBe('2026-06-26T15:30:00+00:00');
    clock.set(Date.UTC(2026, 5, 27));
    expect((await me(key)).plan_active).toBe(false);
    await buy(id, `${id}-3`);
    expect((await me(key)).plan_expires_at).toBe('2026-06-28T00:00:00+00:00');
    expect(await buy('00000000-0000-4000-8000-000000000000', 'p-none')).toEqual({ applied: false, reason: 'no_account' });
  });
});
