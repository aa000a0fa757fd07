import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { isoUtc } from '../src/time.js';
import { describeEachStore } from './support/account-stores.js';
import { type BillingApp, ipnBody, startBillingApp } from './support/billing-app.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { type NowPaymentsServer, startNowPaymentsServer } from './support/nowpayments-server.js';

/** The end-to-end plan flow, on each account store, with NOWPayments played by a local server. */
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);

let engine: TestEngine;
let nowpayments: NowPaymentsServer;
beforeAll(async () => {
  engine = await createTestEngine();
  nowpayments = await startNowPaymentsServer();
});
afterAll(async () => {
  await nowpayments?.close();
  await engine?.close();
});

describeEachStore('billing end to end (%s store)', ({ redisUrl, redisCluster }) => {
  const clock = new ManualClock(T0);
  let b: BillingApp;
  beforeAll(async () => {
    b = await startBillingApp({
      engine: engine.engine,
      clock,
      redisUrl,
      redisCluster,
      env: { NOWPAYMENTS_API_KEY: nowpayments.apiKey, NOWPAYMENTS_IPN_SECRET: 'flow-secret', NOWPAYMENTS_BASE_URL: nowpayments.baseUrl },
    });
  });
  afterAll(() => b?.close());

  const json = async (res: Response | Promise<Response>) => {
    const r = await res;
    return { status: r.status, body: (await r.json()) as any };
  };
  const lastOrderId = () => nowpayments.calls.at(-1)!.body.order_id as string;

  it('register → subscribe → waiting → confirming → finished → retry → renew → expiry', async () => {
    clock.set(T0);
    const registered = await json(b.app.request('/v1/register', { method: 'POST' }));
    expect(registered.status).toBe(201);
    const key: string = registered.body.data.api_key;
    const me = async () => (await json(b.call(key, 'GET', '/v1/me'))).body.data;
    const status = async () => (await json(b.call(key, 'GET', '/v1/billing/status'))).body.data;

    expect(await status()).toEqual({
      plan: 'free',
      active: true,
      expires_at: null,
      data_access_days: 0,
      rate_limit_daily: 100,
      requests_today: 0,
      invoices: [],
    });

    const subscribed = await json(b.call(key, 'POST', '/v1/billing/subscribe', { plan: 'monthly' }));
    expect(subscribed.status).toBe(200);
    const first = subscribed.body.data;
    expect(first).toEqual({
      invoice_url: `https://nowpayments.io/payment/?iid=${first.payment_id}`,
      payment_id: expect.stringMatching(/^\d+$/),
      amount_usd: 59.9,
      plan: 'monthly',
    });
    const invoice1 = { payment_id: first.payment_id as string, order_id: lastOrderId(), amount_usd: 59.9 };
    expect((await status()).invoices).toEqual([
      { payment_id: invoice1.payment_id, plan: 'monthly', amount_usd: 59.9, status: 'waiting', created_at: '2026-03-10T12:00:00+00:00' },
    ]);

    for (const step of ['waiting', 'confirming'] as const) {
      clock.advance(60_000);
      const r = await json(b.ipn(ipnBody(invoice1, step)));
      expect(r).toEqual({ status: 200, body: { success: true, data: { payment_id: invoice1.payment_id, status: step, upgraded: false } } });
      expect(await me()).toMatchObject({ plan: 'free', plan_active: true, plan_expires_at: null, data_access_days: 0, rate_limit_daily: 100 });
      expect((await status()).invoices[0].status).toBe(step);
    }

    clock.advance(60_000);
    const paidAt = clock.now();
    const finished = await json(b.ipn(ipnBody(invoice1, 'finished')));
    expect(finished.body.data).toEqual({ payment_id: invoice1.payment_id, status: 'finished', upgraded: true });
    const expiry1 = paidAt + 30 * DAY;
    expect(await me()).toMatchObject({ plan: 'monthly', plan_active: true, plan_expires_at: isoUtc(expiry1), data_access_days: 30, rate_limit_daily: 50_000 });
    expect(isoUtc(expiry1)).toBe('2026-04-09T12:03:00+00:00');
    expect(await status()).toEqual({
      plan: 'monthly',
      active: true,
      expires_at: '2026-04-09T12:03:00+00:00',
      data_access_days: 30,
      rate_limit_daily: 50_000,
      requests_today: 0,
      invoices: [{ payment_id: invoice1.payment_id, plan: 'monthly', amount_usd: 59.9, status: 'finished', created_at: '2026-03-10T12:00:00+00:00' }],
    });

    // The processor retries, and a late progress report arrives: no second extension, still finished.
    clock.advance(60_000);
    expect((await json(b.ipn(ipnBody(invoice1, 'finished')))).body.data).toEqual({ payment_id: invoice1.payment_id, status: 'finished', upgraded: false });
    expect((await json(b.ipn(ipnBody(invoice1, 'confirming')))).body.data).toEqual({ payment_id: invoice1.payment_id, status: 'finished', upgraded: false });
    expect((await me()).plan_expires_at).toBe(isoUtc(expiry1));

    // Renewal while active extends from the current expiry, not from the payment.
    clock.advance(10 * DAY);
    const renewal = (await json(b.call(key, 'POST', '/v1/billing/subscribe', { plan: 'monthly' }))).body.data;
    const invoice2 = { payment_id: renewal.payment_id as string, order_id: lastOrderId(), amount_usd: 59.9 };
    expect((await json(b.ipn(ipnBody(invoice2, 'finished')))).body.data.upgraded).toBe(true);
    const expiry2 = expiry1 + 30 * DAY;
    expect(await me()).toMatchObject({ plan: 'monthly', plan_active: true, plan_expires_at: isoUtc(expiry2) });
    expect((await status()).invoices.map((i: { payment_id: string }) => i.payment_id)).toEqual([invoice2.payment_id, invoice1.payment_id]);

    // Within the paid window, 20 days of history are allowed.
    const twentyDaysAgo = clock.now() - 20 * DAY;
    expect((await b.call(key, 'GET', `/v1/ticks?asset_id=123&start=${twentyDaysAgo}&end=${clock.now()}`)).status).not.toBe(403);

    // At the expiry instant the plan lapses: name kept, free's limits, no history before today.
    clock.set(expiry2);
    expect(await me()).toMatchObject({ plan: 'monthly', plan_active: false, plan_expires_at: isoUtc(expiry2), data_access_days: 0, rate_limit_daily: 100 });
    expect(await status()).toMatchObject({ plan: 'monthly', active: false, expires_at: isoUtc(expiry2), data_access_days: 0, rate_limit_daily: 100 });
    const yesterday = clock.now() - DAY;
    const denied = await json(b.call(key, 'GET', `/v1/ticks?asset_id=123&start=${yesterday}&end=${clock.now()}`));
    expect(denied).toEqual({
      status: 403,
      body: {
        detail: {
          error: 'data_access_denied',
          message: 'Your plan (monthly) only allows access to the last 0 day(s) of data.',
          plan: 'monthly',
          earliest_allowed: '2026-05-09T00:00:00+00:00',
        },
      },
    });
  });

  it('a different plan starts now; the same plan after expiry starts now', async () => {
    clock.set(T0);
    const { id, key } = await b.newAccount();
    const pay = async (plan: string) => {
      const data = (await json(b.call(key, 'POST', '/v1/billing/subscribe', { plan }))).body.data;
      const invoice = { payment_id: data.payment_id as string, order_id: lastOrderId(), amount_usd: data.amount_usd as number };
      expect((await json(b.ipn(ipnBody(invoice, 'finished')))).body.data.upgraded).toBe(true);
      return b.accounts.getAccount(id);
    };
    expect(await pay('daily')).toMatchObject({ plan: 'daily', plan_expires_at: T0 + DAY });
    clock.advance(3_600_000);
    expect(await pay('unlimited')).toMatchObject({ plan: 'unlimited', plan_expires_at: T0 + 3_600_000 + 30 * DAY });
    clock.advance(2 * DAY);
    expect(await pay('monthly')).toMatchObject({ plan: 'monthly', plan_expires_at: clock.now() + 30 * DAY });
    clock.advance(31 * DAY);
    expect(await pay('monthly')).toMatchObject({ plan: 'monthly', plan_expires_at: clock.now() + 30 * DAY });
  });
});
