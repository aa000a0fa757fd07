import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Invoice } from '../src/accounts/types.js';
import { signIpn } from '../src/billing/signature.js';
import { ManualClock } from '../src/clock.js';
import { describeEachStore } from './support/account-stores.js';
import { type BillingApp, ipnBody, startBillingApp } from './support/billing-app.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

/** POST /v1/billing/ipn: what is refused, what is recorded, and what never upgrades (docs/BILLING.md). */
const T0 = Date.UTC(2026, 4, 1, 8, 0, 0);
const SECRET = 'ipn-test-secret';
let engine: TestEngine;
beforeAll(async () => {
  engine = await createTestEngine();
});
afterAll(() => engine?.close());

describeEachStore('%s store', ({ redisUrl, redisCluster }) => {
  const clock = new ManualClock(T0);
  let b: BillingApp;

  beforeAll(async () => {
    b = await startBillingApp({ engine: engine.engine, clock, redisUrl, redisCluster, env: { NOWPAYMENTS_IPN_SECRET: SECRET } });
  });
  afterAll(() => b?.close());

  let account: { id: string; key: string };
  let invoice: Invoice;
  let n = 0;
  beforeEach(async () => {
    clock.set(T0);
    account = await b.newAccount();
    invoice = {
      payment_id: String(6_000_000_000 + randomInt(1_000_000_000)),
      account_id: account.id,
      plan: 'monthly',
      amount_usd: 59.9,
      order_id: `th-order-${++n}`,
      status: 'waiting',
      created_at: T0,
      updated_at: T0,
      paid_at: null,
    };
    await b.accounts.createInvoice(invoice);
  });

  const read = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });
  const unchanged = async () => {
    expect(await b.accounts.getInvoice(invoice.payment_id)).toEqual(invoice);
    expect(await b.accounts.getAccount(account.id)).toMatchObject({ plan: 'free', plan_expires_at: null });
  };

  describe('signature', () => {
    it('missing header: 401, nothing changes', async () => {
      expect(await read(await b.ipn(ipnBody(invoice, 'finished'), null))).toEqual({
        status: 401,
        body: { detail: { error: 'invalid_signature', message: 'The x-nowpayments-sig header is required.' } },
      });
      await unchanged();
    });

    it('tampered body: 401, nothing changes', async () => {
      const signed = ipnBody(invoice, 'partially_paid');
      const tampered = { ...signed, payment_status: 'finished' };
      expect(await read(await b.ipn(tampered, signIpn(signed, SECRET)))).toEqual({
        status: 401,
        body: { detail: { error: 'invalid_signature', message: 'The x-nowpayments-sig signature does not match the body.' } },
      });
      await unchanged();
    });

    it('a signature of another body: 401 whatever member differs, nested ones included; nothing changes', async () => {
      // The real IPN of another (cheaper) invoice, its signature sent with this invoice's members.
      const other = ipnBody({ payment_id: String(Number(invoice.payment_id) + 1), order_id: 'th-order-other', amount_usd: 1 }, 'finished');
      const signature = signIpn(other, SECRET);
      const forged: Record<string, unknown>[] = [
        { ...other, invoice_id: Number(invoice.payment_id) },
        { ...other, order_id: invoice.order_id },
        { ...other, invoice_id: Number(invoice.payment_id), order_id: invoice.order_id },
        {
          ...other,
          invoice_id: Number(invoice.payment_id),
          order_id: invoice.order_id,
          price_amount: 59.9,
          actually_paid: 59.9,
          pay_amount: 59.9,
          outcome_amount: 59.9,
        },
        { ...ipnBody(invoice, 'finished'), fee: { ...other.fee, serviceFee: 0.01 } },
      ];
      for (const body of forged) {
        expect(await read(await b.ipn(body, signature))).toEqual({
          status: 401,
          body: { detail: { error: 'invalid_signature', message: 'The x-nowpayments-sig signature does not match the body.' } },
        });
      }
      await unchanged();
    });

    it('signed with another secret: 401', async () => {
      const body = ipnBody(invoice, 'finished');
      const res = await b.ipn(body, signIpn(body, 'guess'));
      expect(res.status).toBe(401);
      expect(res.headers.get('WWW-Authenticate')).toBe('Bearer');
      await unchanged();
    });

    it('a body nested 3,000 levels deep (6 KB) is refused with 401, not a stack overflow; nothing changes', async () => {
      const signature = 'ab'.repeat(64);
      for (const raw of [`{"fee":${'['.repeat(3000)}${']'.repeat(3000)}}`, `${'{"fee":'.repeat(2000)}1${'}'.repeat(2000)}`]) {
        expect(await read(await b.ipn(raw, signature))).toEqual({
          status: 401,
          body: { detail: { error: 'invalid_signature', message: 'The x-nowpayments-sig signature does not match the body.' } },
        });
      }
      await unchanged();
    });

    it('keys in any order, nested fee too, verify against the sorted form', async () => {
      const body = ipnBody(invoice, 'confirming');
      const raw = `{"fee":{"withdrawalFee":0,"serviceFee":0,"depositFee":0,"currency":"usdttrc20"},${JSON.stringify({ ...body, fee: undefined }).slice(1)}`;
      const res = await b.ipn(raw, signIpn(body, SECRET));
      expect((await read(res)).body.data).toEqual({ payment_id: invoice.payment_id, status: 'confirming', upgraded: false });
    });

    it('malformed JSON: 400', async () => {
      expect(await read(await b.ipn('{"payment_status":', 'ab'.repeat(64)))).toEqual({
        status: 400,
        body: { detail: { error: 'invalid_parameter', message: 'The IPN body must be a JSON object.', param: 'body' } },
      });
    });
  });

  describe('matching and recording', () => {
    it('records every status on the invoice', async () => {
      for (const [i, status] of ['waiting', 'confirming', 'confirmed', 'sending', 'failed', 'expired', 'refunded'].entries()) {
        clock.set(T0 + (i + 1) * 1000);
        expect((await read(await b.ipn(ipnBody(invoice, status)))).body.data).toEqual({ payment_id: invoice.payment_id, status, upgraded: false });
        expect(await b.accounts.getInvoice(invoice.payment_id)).toMatchObject({ status, updated_at: clock.now(), paid_at: null });
      }
      expect(await b.accounts.getAccount(account.id)).toMatchObject({ plan: 'free' });
    });

    it('unknown status: 400, nothing changes', async () => {
      const res = await read(await b.ipn(ipnBody(invoice, 'paid')));
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatchObject({ error: 'invalid_parameter', param: 'payment_status' });
      await unchanged();
    });

    it('unknown invoice_id or another order_id: 404, nothing changes', async () => {
      expect((await b.ipn(ipnBody(invoice, 'finished', { invoice_id: 1 }))).status).toBe(404);
      expect((await b.ipn(ipnBody(invoice, 'finished', { invoice_id: null }))).status).toBe(404);
      const otherOrder = await read(await b.ipn(ipnBody(invoice, 'finished', { order_id: 'th-someone-else' })));
      expect(otherOrder).toEqual({
        status: 404,
        body: { detail: { message: `No invoice matches invoice_id ${invoice.payment_id} and order_id "th-someone-else".` } },
      });
      await unchanged();
    });

    it('invoice_id as a string matches too', async () => {
      expect((await read(await b.ipn(ipnBody(invoice, 'finished', { invoice_id: invoice.payment_id })))).body.data.upgraded).toBe(true);
    });
  });

  describe('only a full payment upgrades', () => {
    const expectFree = async () => expect(await b.accounts.getAccount(account.id)).toMatchObject({ plan: 'free', plan_expires_at: null });

    it('partially_paid never upgrades', async () => {
      expect((await read(await b.ipn(ipnBody(invoice, 'partially_paid', { actually_paid: 20 })))).body.data).toEqual({
        payment_id: invoice.payment_id,
        status: 'partially_paid',
        upgraded: false,
      });
      await expectFree();
      expect(await b.accounts.getInvoice(invoice.payment_id)).toMatchObject({ status: 'partially_paid', paid_at: null });
    });

    it.each([
      ['a lower amount', { price_amount: 1 }],
      ['a lower amount as a string', { price_amount: '59.8' }],
      ['another currency', { price_currency: 'eur' }],
      ['no amount', { price_amount: null }],
      ['a non-numeric amount', { price_amount: 'lots' }],
    ])('finished with %s never upgrades and is recorded as finished_mismatch', async (_name, overrides) => {
      expect((await read(await b.ipn(ipnBody(invoice, 'finished', overrides)))).body).toEqual({
        success: true,
        data: { payment_id: invoice.payment_id, status: 'finished_mismatch', upgraded: false },
      });
      await expectFree();
      expect(await b.accounts.getInvoice(invoice.payment_id)).toMatchObject({ status: 'finished_mismatch', paid_at: null });
      // A late progress report does not hide how it ended.
      expect((await read(await b.ipn(ipnBody(invoice, 'confirming')))).body.data.status).toBe('finished_mismatch');
      const status = await read(await b.call(account.key, 'GET', '/v1/billing/status'));
      expect(status.body.data.invoices.map((i: { status: string }) => i.status)).toEqual(['finished_mismatch']);
    });

    it.each([
      ['a number', 59.9],
      ['a string', '59.9'],
      ['a string with trailing zero', '59.90'],
    ])('finished with the amount as %s upgrades', async (_name, price_amount) => {
      clock.set(T0 + 5_000);
      const res = await read(await b.ipn(ipnBody(invoice, 'finished', { price_amount, price_currency: 'USD' })));
      expect(res.body.data).toEqual({ payment_id: invoice.payment_id, status: 'finished', upgraded: true });
      expect(await b.accounts.getAccount(account.id)).toMatchObject({ plan: 'monthly', plan_expires_at: T0 + 5_000 + 30 * 86_400_000 });
      expect(await b.accounts.getInvoice(invoice.payment_id)).toMatchObject({ status: 'finished', paid_at: T0 + 5_000 });
    });

    it('a wrong-amount finished followed by the right one upgrades once', async () => {
      await b.ipn(ipnBody(invoice, 'finished', { price_amount: 1 }));
      await expectFree();
      expect((await read(await b.ipn(ipnBody(invoice, 'finished')))).body.data).toEqual({ payment_id: invoice.payment_id, status: 'finished', upgraded: true });
    });

    it('concurrent duplicate finished IPNs upgrade exactly once', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, () => b.ipn(ipnBody(invoice, 'finished')).then(read)));
      expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
      expect(results.filter((r) => r.body.data.upgraded)).toHaveLength(1);
      expect(await b.accounts.getAccount(account.id)).toMatchObject({ plan: 'monthly', plan_expires_at: T0 + 30 * 86_400_000 });
    });

    it('two renewals paid at the same moment both extend', async () => {
      await b.accounts.setPlan(account.id, 'monthly', T0 + 86_400_000);
      const second: Invoice = { ...invoice, payment_id: `${invoice.payment_id}9`, order_id: `${invoice.order_id}-2` };
      await b.accounts.createInvoice(second);
      await Promise.all([b.ipn(ipnBody(invoice, 'finished')), b.ipn(ipnBody(second, 'finished'))]);
      expect(await b.accounts.getAccount(account.id)).toMatchObject({ plan: 'monthly', plan_expires_at: T0 + 61 * 86_400_000 });
    });
  });
});
