import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { NowPaymentsProvider } from '../src/billing/nowpayments.js';
import { ManualClock } from '../src/clock.js';
import { type BillingApp, startBillingApp } from './support/billing-app.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { type NowPaymentsServer, startNowPaymentsServer } from './support/nowpayments-server.js';

/** POST /v1/billing/subscribe with NOWPayments played by a local server: validation and the 502 paths. */
const clock = new ManualClock(Date.UTC(2026, 5, 1));
let engine: TestEngine;
let nowpayments: NowPaymentsServer;
let b: BillingApp;

beforeAll(async () => {
  engine = await createTestEngine();
  nowpayments = await startNowPaymentsServer();
  b = await startBillingApp({
    engine: engine.engine,
    clock,
    env: { NOWPAYMENTS_API_KEY: nowpayments.apiKey, NOWPAYMENTS_IPN_SECRET: 's', NOWPAYMENTS_BASE_URL: nowpayments.baseUrl },
    // A short time-out so the hanging processor case takes a fraction of a second.
    payments: (config) =>
      new NowPaymentsProvider({
        apiKey: config.NOWPAYMENTS_API_KEY!,
        ipnSecret: 's',
        baseUrl: config.NOWPAYMENTS_BASE_URL,
        publicUrl: config.publicUrl,
        timeoutMs: 400,
      }),
  });
});
afterAll(async () => {
  await b?.close();
  await nowpayments?.close();
  await engine?.close();
});

let key: string;
let accountId: string;
beforeEach(async () => {
  nowpayments.behave('ok');
  ({ key, id: accountId } = await b.newAccount());
});

const read = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });

describe('POST /v1/billing/subscribe', () => {
  it.each([
    ['daily', 1],
    ['monthly', 59.9],
    ['unlimited', 99.9],
  ])('%s: an invoice for %s USD, recorded as waiting', async (plan, amount) => {
    const res = await read(await b.call(key, 'POST', '/v1/billing/subscribe', { plan }));
    expect(res.status).toBe(200);
    const { payment_id } = res.body.data;
    expect(res.body).toEqual({
      success: true,
      data: { invoice_url: `https://nowpayments.io/payment/?iid=${payment_id}`, payment_id, amount_usd: amount, plan },
    });
    expect(nowpayments.calls.at(-1)!.body).toMatchObject({
      price_amount: amount,
      price_currency: 'usd',
      ipn_callback_url: 'http://tickhouse.test/v1/billing/ipn',
    });
    expect(await b.accounts.getInvoice(payment_id)).toEqual({
      payment_id,
      account_id: accountId,
      plan,
      amount_usd: amount,
      order_id: nowpayments.calls.at(-1)!.body.order_id,
      status: 'waiting',
      created_at: clock.now(),
      updated_at: clock.now(),
      paid_at: null,
    });
  });

  it.each([
    ['free', { plan: 'free' }],
    ['an unknown plan', { plan: 'gold' }],
    ['a number', { plan: 3 }],
    ['no plan', {}],
  ])('rejects %s with 400 invalid_parameter', async (_name, body) => {
    const calls = nowpayments.calls.length;
    expect(await read(await b.call(key, 'POST', '/v1/billing/subscribe', body))).toEqual({
      status: 400,
      body: { detail: { error: 'invalid_parameter', message: 'plan must be one of daily, monthly, unlimited', param: 'plan' } },
    });
    expect(nowpayments.calls.length).toBe(calls);
    expect(await b.accounts.listInvoices(accountId, 10)).toEqual([]);
  });

  it('rejects a body that is not JSON', async () => {
    const res = await b.app.request('/v1/billing/subscribe', {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: '{plan:',
    });
    expect(await read(res)).toMatchObject({ status: 400, body: { detail: { error: 'invalid_parameter', param: 'body' } } });
  });

  it('rejects JSON sent with another Content-Type with 400, not 500', async () => {
    const res = await b.app.request('/v1/billing/subscribe', {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'text/plain' },
      body: '{"plan":"monthly"}',
    });
    expect(await read(res)).toEqual({
      status: 400,
      body: { detail: { error: 'invalid_parameter', message: 'The request body must be JSON sent with Content-Type: application/json.', param: 'body' } },
    });
    expect(await b.accounts.listInvoices(accountId, 10)).toEqual([]);
  });

  it('requires a key', async () => {
    const res = await b.app.request('/v1/billing/subscribe', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"plan":"monthly"}' });
    expect((await read(res)).body.detail.error).toBe('invalid_api_key');
  });

  it.each([
    ['an error status', { status: 500 } as const, 'The payment provider refused to create the invoice (HTTP 500); nothing was charged. Try again shortly.'],
    ['malformed JSON', 'malformed' as const, 'The payment provider answered with malformed JSON; nothing was charged. Try again shortly.'],
    ['no answer (time-out)', 'hang' as const, 'The payment provider did not answer within 0.4 s; nothing was charged. Try again shortly.'],
  ])('processor failure, %s: 502 payment_provider_error and nothing pending', async (_name, behaviour, message) => {
    nowpayments.behave(behaviour);
    const calls = nowpayments.calls.length;
    expect(await read(await b.call(key, 'POST', '/v1/billing/subscribe', { plan: 'monthly' }))).toEqual({
      status: 502,
      body: { detail: { error: 'payment_provider_error', message } },
    });
    expect(nowpayments.calls.length).toBe(calls + 1);
    expect(await b.accounts.listInvoices(accountId, 10)).toEqual([]);
    expect((await read(await b.call(key, 'GET', '/v1/billing/status'))).body.data.invoices).toEqual([]);
  });

  it('lists at most the last 10 invoices, newest first', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      clock.advance(1000);
      ids.push((await read(await b.call(key, 'POST', '/v1/billing/subscribe', { plan: 'daily' }))).body.data.payment_id);
    }
    const listed = (await read(await b.call(key, 'GET', '/v1/billing/status'))).body.data.invoices;
    expect(listed.map((i: { payment_id: string }) => i.payment_id)).toEqual(ids.reverse().slice(0, 10));
    expect(listed[0]).toEqual({
      payment_id: ids[0],
      plan: 'daily',
      amount_usd: 1,
      status: 'waiting',
      created_at: new Date(clock.now()).toISOString().replace('.000Z', '+00:00'),
    });
  });
});

describe('openapi.json', () => {
  it('documents the billing routes; the sandbox pages exist only in sandbox mode', async () => {
    const doc = (await (await b.app.request('/v1/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths['/v1/billing/status'])).toEqual(['get']);
    expect(Object.keys(doc.paths['/v1/billing/subscribe'])).toEqual(['post']);
    expect(Object.keys(doc.paths['/v1/billing/ipn'])).toEqual(['post']);
    expect(doc.paths['/sandbox/invoices/{id}']).toBeUndefined();
    expect((await b.app.request('/sandbox/invoices/sandbox_1')).status).toBe(404);
  });
});
