import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { PaymentsUnavailableError } from '../billing/errors.js';
import { createPaymentProvider } from '../billing/index.js';
import { handleIpn, IPN_STATUSES } from '../billing/ipn.js';
import type { PaymentProvider } from '../billing/provider.js';
import { sandboxInvoicePage, sandboxPaymentIpn } from '../billing/sandbox.js';
import { signIpn } from '../billing/signature.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { ok } from '../http/envelope.js';
import { notFound } from '../http/errors.js';
import { errorResponses, successResponse } from '../http/openapi.js';
import { PAID_PLANS, PLANS } from '../plans.js';
import { isoUtc, utcDay } from '../time.js';

const InvoiceSummary = z.object({
  payment_id: z.string(),
  plan: z.enum(PAID_PLANS as [string, ...string[]]),
  amount_usd: z.number(),
  status: z.string().openapi({ example: 'waiting' }),
  created_at: z.string().openapi({ example: '2026-06-25T00:00:00+00:00' }),
});

const statusRoute = createRoute({
  method: 'get',
  path: '/v1/billing/status',
  operationId: 'getBillingStatus',
  tags: ['billing'],
  summary: 'Plan, expiry, limits and the last 10 invoices',
  security: [{ bearer: [] }],
  responses: {
    200: successResponse(
      'Billing status',
      z.object({
        plan: z.string(),
        active: z.boolean(),
        expires_at: z.string().nullable().openapi({ example: '2026-06-25T00:00:00+00:00' }),
        data_access_days: z.number().int(),
        rate_limit_daily: z.number().int(),
        requests_today: z.number().int(),
        invoices: z.array(InvoiceSummary),
      }),
    ),
    ...errorResponses(401, 503),
  },
});

const SubscribeBody = z
  .object({
    plan: z.enum(PAID_PLANS as [string, ...string[]], { error: `plan must be one of ${PAID_PLANS.join(', ')}` }),
  })
  .openapi({ example: { plan: 'monthly' } });

const subscribeRoute = createRoute({
  method: 'post',
  path: '/v1/billing/subscribe',
  operationId: 'subscribe',
  tags: ['billing'],
  summary: 'Create a crypto invoice for a paid plan',
  description: 'The account changes plan by itself when the processor reports the invoice paid (IPN `finished`).',
  security: [{ bearer: [] }],
  request: { body: { required: true, content: { 'application/json': { schema: SubscribeBody } } } },
  responses: {
    200: successResponse(
      'Invoice to pay at invoice_url',
      z.object({
        invoice_url: z.string().url(),
        payment_id: z.string(),
        amount_usd: z.number(),
        plan: z.string(),
      }),
    ),
    ...errorResponses(400, 401, 413, 502, 503),
  },
});

const ipnRoute = createRoute({
  method: 'post',
  path: '/v1/billing/ipn',
  operationId: 'receivePaymentNotification',
  security: [],
  tags: ['billing'],
  summary: 'Payment processor callback (NOWPayments IPN)',
  description:
    'Authenticated by `x-nowpayments-sig`: hex HMAC-SHA512 of the body re-serialised with keys sorted recursively. ' +
    'Every status is recorded on the invoice; only `finished` with the invoice amount and currency upgrades, once per invoice.',
  request: {
    headers: z.object({ 'x-nowpayments-sig': z.string().optional() }),
    // A plain schema documents the body without the route validator: the signature is checked
    // before anything else is believed, and the handler parses the raw text itself.
    body: {
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: {
              payment_id: { type: ['integer', 'string'] },
              invoice_id: { type: ['integer', 'string'] },
              order_id: { type: 'string' },
              payment_status: { type: 'string', enum: [...IPN_STATUSES] },
              price_amount: { type: ['number', 'string'] },
              price_currency: { type: 'string' },
              pay_currency: { type: 'string' },
              actually_paid: { type: ['number', 'string'] },
            },
          },
        },
      },
    },
  },
  responses: {
    200: successResponse('Recorded', z.object({ payment_id: z.string(), status: z.string(), upgraded: z.boolean() })),
    ...errorResponses(400, 401, 404, 413, 503),
  },
});

const InvoiceIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: 'id', in: 'path' }, example: 'sandbox_0a1b2c3d4e5f60718293' }),
});

const sandboxPageRoute = createRoute({
  method: 'get',
  path: '/sandbox/invoices/{id}',
  operationId: 'getSandboxInvoice',
  security: [],
  tags: ['sandbox'],
  summary: 'Sandbox invoice page (sandbox provider only)',
  request: { params: InvoiceIdParam },
  responses: { 200: { description: 'HTML page with a Pay button', content: { 'text/html': { schema: z.string() } } }, ...errorResponses(400, 404, 503) },
});

const sandboxPayRoute = createRoute({
  method: 'post',
  path: '/sandbox/invoices/{id}/pay',
  operationId: 'paySandboxInvoice',
  security: [],
  tags: ['sandbox'],
  summary: 'Pay a sandbox invoice: delivers a signed `finished` IPN to /v1/billing/ipn',
  request: { params: InvoiceIdParam },
  responses: {
    303: { description: 'Paid; back to the invoice page' },
    ...errorResponses(400, 404, 503),
    502: { description: 'The IPN was refused', content: { 'text/html': { schema: z.string() } } },
  },
});

export function registerBillingRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const payments = deps.payments === undefined ? createPaymentProvider(deps.config) : deps.payments;
  const provider = () => {
    if (!payments) throw new PaymentsUnavailableError('This server takes no payments: no payment provider is configured.');
    return payments;
  };

  app.openapi(statusRoute, async (c) => {
    const account = c.get('account');
    const effective = c.get('effective');
    const [requests_today, invoices] = await Promise.all([
      deps.accounts.getDaily(account.id, utcDay(deps.clock.now())),
      deps.accounts.listInvoices(account.id, 10),
    ]);
    return ok(c, {
      plan: effective.plan,
      active: effective.active,
      expires_at: account.plan_expires_at === null ? null : isoUtc(account.plan_expires_at),
      data_access_days: effective.data_access_days,
      rate_limit_daily: effective.rate_limit_daily,
      requests_today,
      invoices: invoices.map((i) => ({ payment_id: i.payment_id, plan: i.plan, amount_usd: i.amount_usd, status: i.status, created_at: isoUtc(i.created_at) })),
    });
  });

  app.openapi(subscribeRoute, async (c) => {
    const plan = c.req.valid('json').plan as (typeof PAID_PLANS)[number];
    const account = c.get('account');
    const amount_usd = PLANS[plan].price_usd;
    // A PaymentProviderError becomes the 502 of render-error.ts.
    const created = await provider().createInvoice({ plan, amount_usd, account_id: account.id });
    const now = deps.clock.now();
    // Recorded only once the processor has answered: a failed creation leaves nothing pending.
    await deps.accounts.createInvoice({
      payment_id: created.payment_id,
      account_id: account.id,
      plan,
      amount_usd,
      order_id: created.order_id,
      status: 'waiting',
      created_at: now,
      updated_at: now,
      paid_at: null,
    });
    return ok(c, { invoice_url: created.invoice_url, payment_id: created.payment_id, amount_usd, plan });
  });

  app.openapi(ipnRoute, async (c) => {
    const outcome = await handleIpn(deps, provider().ipnSecret, await c.req.text(), c.req.header('x-nowpayments-sig'));
    return ok(c, outcome);
  });

  if (payments?.name === 'sandbox') registerSandboxPages(app, deps, payments);
}

/**
 * The Pay form delivers its IPN with `app.request()`: the request runs the whole middleware chain
 * and the real `/v1/billing/ipn` handler in-process, and needs no route from the server back to
 * itself (PUBLIC_URL may name a proxy or a host the container cannot reach).
 */
function registerSandboxPages(app: OpenAPIHono<AppEnv>, deps: AppDeps, payments: PaymentProvider) {
  const findInvoice = async (id: string) => {
    const invoice = await deps.accounts.getInvoice(id);
    if (!invoice) throw notFound(`No sandbox invoice ${id}.`);
    return invoice;
  };

  app.openapi(sandboxPageRoute, async (c) => c.html(sandboxInvoicePage(await findInvoice(c.req.valid('param').id)), 200));

  app.openapi(sandboxPayRoute, async (c) => {
    const invoice = await findInvoice(c.req.valid('param').id);
    const ipn = sandboxPaymentIpn(invoice, deps.clock.now());
    const delivered = await app.request('/v1/billing/ipn', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'x-nowpayments-sig': signIpn(ipn, payments.ipnSecret) },
      body: JSON.stringify(ipn),
    });
    if (delivered.status !== 200) {
      const notice = `The payment notification was refused (HTTP ${delivered.status}).`;
      return c.html(sandboxInvoicePage(await findInvoice(invoice.payment_id), notice), 502);
    }
    return c.redirect(`/sandbox/invoices/${encodeURIComponent(invoice.payment_id)}`, 303);
  });
}
