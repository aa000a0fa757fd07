import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { loadDemoDataIfEmpty } from '../src/demo/load.js';
import { type BillingApp, startBillingApp } from './support/billing-app.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

/**
 * With a server backend (CLICKHOUSE_URL or REDIS_URL) nobody gets sandbox upgrades or demo ticks
 * without asking for them by name; the embedded quick start keeps both.
 */
const CH = 'http://clickhouse.internal:8123';
const REDIS = 'redis://redis.internal:6379';

describe('defaults by deployment', () => {
  it.each([
    ['embedded quick start', {}, 'sandbox', true],
    ['CLICKHOUSE_URL', { CLICKHOUSE_URL: CH }, 'none', false],
    ['REDIS_URL', { REDIS_URL: REDIS }, 'none', false],
    ['both', { CLICKHOUSE_URL: CH, REDIS_URL: REDIS }, 'none', false],
    ['server backend, asked for by name', { CLICKHOUSE_URL: CH, PAYMENTS: 'sandbox', DEMO_DATA: '1' }, 'sandbox', true],
    ['server backend with a NOWPayments key', { REDIS_URL: REDIS, NOWPAYMENTS_API_KEY: 'k', NOWPAYMENTS_IPN_SECRET: 's' }, 'nowpayments', false],
    ['embedded with a NOWPayments key', { NOWPAYMENTS_API_KEY: 'k', NOWPAYMENTS_IPN_SECRET: 's' }, 'nowpayments', true],
    ['embedded, both turned off', { PAYMENTS: 'none', DEMO_DATA: '0' }, 'none', false],
  ] as const)('%s', (_name, env, payments, demo) => {
    const config = loadConfig(env);
    expect([config.PAYMENTS, config.DEMO_DATA]).toEqual([payments, demo]);
  });

  it('PAYMENTS=nowpayments without a key, or an unknown PAYMENTS, stops start-up with one line', () => {
    expect(() => loadConfig({ PAYMENTS: 'nowpayments' })).toThrow('Invalid configuration: NOWPAYMENTS_API_KEY is required when PAYMENTS=nowpayments');
    expect(() => loadConfig({ PAYMENTS: 'free' })).toThrow(
      'Invalid configuration: PAYMENTS="free": Invalid option: expected one of "nowpayments"|"sandbox"|"none"',
    );
  });
});

describe('a server backend without a payment provider', () => {
  const redisUrl = inject('redisUrl');
  let engine: TestEngine;
  let b: BillingApp;
  beforeAll(async () => {
    engine = await createTestEngine();
    // PAYMENTS='' clears the sandbox the billing test app asks for: the deployment's own default.
    if (redisUrl) b = await startBillingApp({ engine: engine.engine, clock: new ManualClock(Date.UTC(2026, 5, 1)), redisUrl, env: { PAYMENTS: '' } });
  });
  afterAll(async () => {
    await b?.close();
    await engine?.close();
  });

  it.skipIf(!redisUrl)('subscribe and IPN answer 503 payments_unavailable, record nothing; no sandbox pages', async () => {
    expect(b.payments).toBeNull();
    const { id, key } = await b.newAccount();
    const unavailable = { detail: { error: 'payments_unavailable', message: 'This server takes no payments: no payment provider is configured.' } };
    const subscribe = await b.call(key, 'POST', '/v1/billing/subscribe', { plan: 'monthly' });
    expect([subscribe.status, await subscribe.json()]).toEqual([503, unavailable]);
    const ipn = await b.ipn({ invoice_id: 'sandbox_0', order_id: 'sandbox_0', payment_status: 'finished' }, 'ab');
    expect([ipn.status, await ipn.json()]).toEqual([503, unavailable]);
    expect(await b.accounts.listInvoices(id, 10)).toEqual([]);
    expect((await b.app.request('/sandbox/invoices/sandbox_0')).status).toBe(404);
    expect((await b.app.request('/sandbox/invoices/sandbox_0/pay', { method: 'POST' })).status).toBe(404);
    // The contract says so too.
    const doc = (await (await b.app.request('/v1/openapi.json')).json()) as any;
    expect(Object.keys(doc.paths['/v1/billing/subscribe'].post.responses)).toContain('503');
    expect(doc.paths['/sandbox/invoices/{id}']).toBeUndefined();
  });

  it.skipIf(!redisUrl)('the first start loads no demo ticks', async () => {
    const config = loadConfig({ CLICKHOUSE_URL: CH, REDIS_URL: redisUrl, LOG_LEVEL: 'silent', DEMO_TICKS: '1000' });
    await loadDemoDataIfEmpty({ config, engine: engine.engine, accounts: b.accounts, clock: new ManualClock(Date.UTC(2026, 5, 1)) });
    const [{ n }] = await engine.engine.rows<{ n: string | number }>('SELECT count() AS n FROM ticks');
    expect(Number(n)).toBe(0);
  });
});
