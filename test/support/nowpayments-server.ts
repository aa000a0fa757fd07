import { randomInt } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback server speaking NOWPayments' `POST /v1/invoice`: checks `x-api-key`, answers with the
 * response shape they send (test/fixtures/nowpayments/samples.jsonl line 4), and can be told to
 * fail with a status, answer malformed JSON, or hang (never answer) to exercise the client's time-out.
 */
/** `stall`: headers and half a body, then nothing (a time-out must cover reading the body too). */
export type NowPaymentsBehaviour = 'ok' | 'malformed' | 'no-url' | 'hang' | 'stall' | { status: number };

export interface InvoiceCall {
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

export interface NowPaymentsServer {
  /** Base URL to use as NOWPAYMENTS_BASE_URL (ends in /v1). */
  baseUrl: string;
  apiKey: string;
  calls: InvoiceCall[];
  behave(next: NowPaymentsBehaviour): void;
  close(): Promise<void>;
}

export async function startNowPaymentsServer(apiKey = 'np-test-key'): Promise<NowPaymentsServer> {
  let behaviour: NowPaymentsBehaviour = 'ok';
  // Random base: test files sharing one Redis must not mint the same invoice ids.
  let nextId = 5_000_000_000 + randomInt(1_000_000_000);
  const calls: InvoiceCall[] = [];

  const reply = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/invoice') return reply(res, 404, { status: false, statusCode: 404, message: 'Not found' });
    if (req.headers['x-api-key'] !== apiKey) {
      return reply(res, 403, { status: false, statusCode: 403, code: 'INVALID_API_KEY', message: 'Invalid api key' });
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    calls.push({ headers: req.headers, body });

    if (behaviour === 'hang') return;
    if (behaviour === 'stall') {
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
      res.write('{"id":"5222917334",');
      return;
    }
    if (behaviour === 'malformed') return reply(res, 200, '{"id":"5222917334","invoice_url":');
    if (typeof behaviour === 'object')
      return reply(res, behaviour.status, { status: false, statusCode: behaviour.status, code: 'INTERNAL_ERROR', message: 'Internal server error' });

    const id = String(nextId++);
    const now = new Date().toISOString();
    reply(res, 200, {
      id,
      token_id: '5998913548',
      order_id: body.order_id,
      order_description: body.order_description,
      // NOWPayments echoes amounts as strings.
      price_amount: String(body.price_amount),
      price_currency: body.price_currency,
      pay_currency: null,
      ipn_callback_url: body.ipn_callback_url,
      invoice_url: behaviour === 'no-url' ? null : `https://nowpayments.io/payment/?iid=${id}`,
      success_url: body.success_url,
      cancel_url: body.cancel_url,
      customer_email: null,
      partially_paid_url: null,
      payout_currency: null,
      created_at: now,
      updated_at: now,
      is_fixed_rate: true,
      is_fee_paid_by_user: true,
      source: null,
      collect_user_data: false,
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey,
    calls,
    behave(next) {
      behaviour = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
