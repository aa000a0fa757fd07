import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PaymentProviderError } from '../src/billing/errors.js';
import { NowPaymentsProvider } from '../src/billing/nowpayments.js';
import { type NowPaymentsServer, startNowPaymentsServer } from './support/nowpayments-server.js';

let server: NowPaymentsServer;
beforeAll(async () => {
  server = await startNowPaymentsServer();
});
afterAll(() => server.close());
beforeEach(() => {
  server.behave('ok');
  server.calls.length = 0;
});

const client = (overrides: { apiKey?: string; timeoutMs?: number } = {}) =>
  new NowPaymentsProvider({
    apiKey: overrides.apiKey ?? server.apiKey,
    ipnSecret: 'ipn-secret',
    baseUrl: server.baseUrl,
    publicUrl: 'https://tickhouse.example',
    timeoutMs: overrides.timeoutMs ?? 2_000,
  });

const request = { plan: 'monthly' as const, amount_usd: 59.9, account_id: 'acc-1' };

describe('NOWPayments client: POST /v1/invoice', () => {
  it('creates an invoice with the documented body and returns their id and URL', async () => {
    const created = await client().createInvoice(request);
    expect(created.payment_id).toMatch(/^\d+$/);
    expect(created.invoice_url).toBe(`https://nowpayments.io/payment/?iid=${created.payment_id}`);
    expect(created.order_id).toMatch(/^th-[0-9a-f-]{36}$/);

    expect(server.calls).toHaveLength(1);
    const [call] = server.calls;
    expect(call.headers['x-api-key']).toBe(server.apiKey);
    expect(call.headers['content-type']).toBe('application/json');
    expect(call.body).toEqual({
      price_amount: 59.9,
      price_currency: 'usd',
      order_id: created.order_id,
      order_description: 'tickhouse monthly plan (30 days)',
      ipn_callback_url: 'https://tickhouse.example/v1/billing/ipn',
      success_url: 'https://tickhouse.example/?payment=success',
      cancel_url: 'https://tickhouse.example/?payment=cancelled',
    });
  });

  it('sends a fresh order reference per invoice', async () => {
    const a = await client().createInvoice(request);
    const b = await client().createInvoice(request);
    expect(a.order_id).not.toBe(b.order_id);
    expect(a.payment_id).not.toBe(b.payment_id);
  });

  it('turns a refused API key into a provider error', async () => {
    await expect(client({ apiKey: 'wrong' }).createInvoice(request)).rejects.toThrow(
      new PaymentProviderError('The payment provider refused to create the invoice (HTTP 403); nothing was charged. Try again shortly.'),
    );
  });

  it('turns a 500 into a provider error', async () => {
    server.behave({ status: 500 });
    await expect(client().createInvoice(request)).rejects.toThrow('refused to create the invoice (HTTP 500)');
  });

  it('turns malformed JSON into a provider error', async () => {
    server.behave('malformed');
    await expect(client().createInvoice(request)).rejects.toThrow('The payment provider answered with malformed JSON; nothing was charged. Try again shortly.');
  });

  it('turns an answer without invoice_url into a provider error', async () => {
    server.behave('no-url');
    await expect(client().createInvoice(request)).rejects.toThrow('answered without an invoice id or URL');
  });

  it('gives up on a processor that does not answer, after its time-out', async () => {
    server.behave('hang');
    const started = performance.now();
    await expect(client({ timeoutMs: 300 }).createInvoice(request)).rejects.toThrow(
      new PaymentProviderError('The payment provider did not answer within 0.3 s; nothing was charged. Try again shortly.'),
    );
    const elapsed = performance.now() - started;
    // Not before its time-out (less a little: timers count whole ms); after it, within a bound a loaded
    // machine meets that still tells it from the provider's 15 s default.
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(10_000);
  });

  it('times out a processor that stalls in the middle of its answer', async () => {
    server.behave('stall');
    await expect(client({ timeoutMs: 300 }).createInvoice(request)).rejects.toThrow('did not answer within 0.3 s');
  });

  it('reports an unreachable processor', async () => {
    const gone = new NowPaymentsProvider({ apiKey: 'k', ipnSecret: 's', baseUrl: 'http://127.0.0.1:1/v1', publicUrl: 'http://x', timeoutMs: 1_000 });
    await expect(gone.createInvoice(request)).rejects.toThrow('The payment provider could not be reached; nothing was charged. Try again shortly.');
  });
});
