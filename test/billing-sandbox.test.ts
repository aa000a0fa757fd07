import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxPaymentIpn } from '../src/billing/sandbox.js';
import { signIpn } from '../src/billing/signature.js';
import { ManualClock } from '../src/clock.js';
import { type BillingApp, startBillingApp } from './support/billing-app.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

/** The sandbox provider (no NOWPayments key, no IPN secret): invoice page, Pay form, upgrade. */
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 6, 1, 9, 30, 0);
const clock = new ManualClock(T0);
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

const read = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });

describe('sandbox provider', () => {
  it('is chosen without NOWPAYMENTS_API_KEY and signs with a random secret', () => {
    expect(b.payments?.name).toBe('sandbox');
    expect(b.payments?.ipnSecret).toMatch(/^[0-9a-f]{64}$/);
  });

  it('subscribe → local invoice page → Pay → the account is upgraded, once', async () => {
    const { id, key } = await b.newAccount();
    const subscribed = await read(await b.call(key, 'POST', '/v1/billing/subscribe', { plan: 'monthly' }));
    expect(subscribed.status).toBe(200);
    const { invoice_url, payment_id } = subscribed.body.data;
    expect(subscribed.body.data).toEqual({
      invoice_url: `http://tickhouse.test/sandbox/invoices/${payment_id}`,
      payment_id,
      amount_usd: 59.9,
      plan: 'monthly',
    });
    expect(payment_id).toMatch(/^sandbox_[0-9a-f]{20}$/);
    const path = new URL(invoice_url).pathname;

    const page = await b.app.request(path);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=UTF-8');
    const html = await page.text();
    expect(html).toContain(`<dd data-testid="plan">monthly (30 days)</dd>`);
    expect(html).toContain(`<dd data-testid="amount">59.90 USD</dd>`);
    expect(html).toContain(`<dd data-testid="status">waiting</dd>`);
    const action = /<form method="post" action="([^"]+)">/.exec(html)?.[1];
    expect(action).toBe(`${path}/pay`);

    clock.advance(120_000);
    const paid = await b.app.request(action!, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: '' });
    expect(paid.status).toBe(303);
    expect(paid.headers.get('location')).toBe(path);
    const expiry = T0 + 120_000 + 30 * DAY;
    expect(await b.accounts.getAccount(id)).toMatchObject({ plan: 'monthly', plan_expires_at: expiry });
    expect((await read(await b.call(key, 'GET', '/v1/billing/status'))).body.data).toMatchObject({
      plan: 'monthly',
      active: true,
      expires_at: '2026-07-31T09:32:00+00:00',
      invoices: [{ payment_id, plan: 'monthly', amount_usd: 59.9, status: 'finished', created_at: '2026-07-01T09:30:00+00:00' }],
    });
    const after = await (await b.app.request(path)).text();
    expect(after).toContain('data-testid="paid"');
    expect(after).not.toContain('<form');

    // Paying again (a double click, a reload) does not extend twice.
    clock.advance(60_000);
    expect((await b.app.request(action!, { method: 'POST' })).status).toBe(303);
    expect(await b.accounts.getAccount(id)).toMatchObject({ plan_expires_at: expiry });
  });

  it('only the service can sign: an IPN forged with another secret is refused', async () => {
    const { id, key } = await b.newAccount();
    const { payment_id } = (await read(await b.call(key, 'POST', '/v1/billing/subscribe', { plan: 'daily' }))).body.data;
    const forged = sandboxPaymentIpn((await b.accounts.getInvoice(payment_id))!, clock.now());
    expect((await b.ipn(forged, signIpn(forged, ''))).status).toBe(401);
    expect((await b.ipn(forged, signIpn(forged, 'test-secret'))).status).toBe(401);
    expect(await b.accounts.getAccount(id)).toMatchObject({ plan: 'free' });
  });

  it('a signed finished IPN for the wrong amount: the page says so, not "Paid", and Pay still works', async () => {
    const { id, key } = await b.newAccount();
    const { payment_id, invoice_url } = (await read(await b.call(key, 'POST', '/v1/billing/subscribe', { plan: 'daily' }))).body.data;
    const short = { ...sandboxPaymentIpn((await b.accounts.getInvoice(payment_id))!, clock.now()), price_amount: 0.5 };
    expect((await read(await b.ipn(short))).body.data).toEqual({ payment_id, status: 'finished_mismatch', upgraded: false });
    expect(await b.accounts.getAccount(id)).toMatchObject({ plan: 'free' });
    const path = new URL(invoice_url).pathname;
    const page = await (await b.app.request(path)).text();
    expect(page).toContain('<dd data-testid="status">finished_mismatch</dd>');
    expect(page).toContain(
      '<p class="error" data-testid="mismatch">A payment was reported for another amount or currency than this invoice asks for: not paid, the plan is ' +
        'unchanged.</p>',
    );
    expect(page).not.toContain('data-testid="paid"');
    expect((await b.app.request(`${path}/pay`, { method: 'POST' })).status).toBe(303);
    expect(await b.accounts.getAccount(id)).toMatchObject({ plan: 'daily' });
    const paid = await (await b.app.request(path)).text();
    expect(paid).toContain('data-testid="paid"');
    expect(paid).not.toContain('data-testid="mismatch"');
  });

  it('unknown invoice: 404 on the page and on Pay', async () => {
    expect((await b.app.request('/sandbox/invoices/sandbox_nope')).status).toBe(404);
    expect((await b.app.request('/sandbox/invoices/sandbox_nope/pay', { method: 'POST' })).status).toBe(404);
  });

  it('the sandbox pages are in openapi.json', async () => {
    const doc = (await (await b.app.request('/v1/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths['/sandbox/invoices/{id}'])).toEqual(['get']);
    expect(Object.keys(doc.paths['/sandbox/invoices/{id}/pay'])).toEqual(['post']);
  });
});
