import { randomBytes } from 'node:crypto';
import type { Invoice } from '../accounts/types.js';
import { PLANS } from '../plans.js';
import type { CreatedInvoice, InvoiceRequest, PaymentProvider } from './provider.js';

/**
 * The service's own stand-in for NOWPayments (docs/BILLING.md): invoices live at
 * `{PUBLIC_URL}/sandbox/invoices/<id>`, whose Pay button sends a signed IPN through the same callback
 * path a real payment takes. The id doubles as the order reference.
 */
export class SandboxProvider implements PaymentProvider {
  readonly name = 'sandbox';

  constructor(
    private readonly publicUrl: string,
    readonly ipnSecret: string,
  ) {}

  async createInvoice(_request: InvoiceRequest): Promise<CreatedInvoice> {
    const id = `sandbox_${randomBytes(10).toString('hex')}`;
    return { payment_id: id, order_id: id, invoice_url: `${this.publicUrl}/sandbox/invoices/${id}` };
  }
}

/** A payment of `invoice` in full, shaped like the IPNs NOWPayments sends (samples.jsonl). */
export function sandboxPaymentIpn(invoice: Invoice, now: number): Record<string, unknown> {
  return {
    payment_id: invoice.payment_id,
    invoice_id: invoice.payment_id,
    parent_payment_id: null,
    payment_status: 'finished',
    pay_address: 'sandbox',
    payin_extra_id: null,
    price_amount: invoice.amount_usd,
    price_currency: 'usd',
    pay_amount: invoice.amount_usd,
    actually_paid: invoice.amount_usd,
    actually_paid_at_fiat: invoice.amount_usd,
    pay_currency: 'usdttrc20',
    order_id: invoice.order_id,
    order_description: `tickhouse ${invoice.plan} plan (sandbox)`,
    purchase_id: invoice.payment_id,
    outcome_amount: invoice.amount_usd,
    outcome_currency: 'usdttrc20',
    payment_extra_ids: null,
    fee: { currency: 'usdttrc20', depositFee: 0, withdrawalFee: 0, serviceFee: 0 },
    updated_at: now,
  };
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] as string);

/** The invoice page: plan, amount, status, and the Pay form while the invoice is unpaid. */
export function sandboxInvoicePage(invoice: Invoice, notice?: string): string {
  const id = escapeHtml(invoice.payment_id);
  const days = PLANS[invoice.plan].duration_days;
  const paid = invoice.status === 'finished';
  const mismatch =
    invoice.status === 'finished_mismatch'
      ? '<p class="error" data-testid="mismatch">A payment was reported for another amount or currency than this invoice asks for: not paid, the plan is ' +
        'unchanged.</p>\n'
      : '';
  const action = paid
    ? `<p class="paid" data-testid="paid">Paid. Your account is on the ${invoice.plan} plan; you can close this tab.</p>`
    : `${mismatch}<form method="post" action="/sandbox/invoices/${id}/pay"><button type="submit" data-testid="pay">Pay ${invoice.amount_usd.toFixed(2)} ` +
      `USD</button></form>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sandbox invoice ${id} · tickhouse</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; color: #1d2330; }
  .card { border: 1px solid #d5dae3; border-radius: 8px; padding: 1.5rem; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
  dt { color: #5b6478; }
  button { font: inherit; padding: .6rem 1.4rem; border: 0; border-radius: 6px; background: #2453d4; color: #fff; cursor: pointer; }
  .note { color: #5b6478; font-size: .9rem; }
  .paid { color: #17743a; font-weight: 600; }
  .error { color: #b3261e; }
</style>
</head>
<body>
<main class="card">
<h1>Sandbox invoice</h1>
<p class="note">No real money moves: this page stands in for the crypto payment processor.</p>
<dl>
  <dt>Invoice</dt><dd data-testid="invoice-id">${id}</dd>
  <dt>Plan</dt><dd data-testid="plan">${invoice.plan} (${days} day${days === 1 ? '' : 's'})</dd>
  <dt>Amount</dt><dd data-testid="amount">${invoice.amount_usd.toFixed(2)} USD</dd>
  <dt>Status</dt><dd data-testid="status">${escapeHtml(invoice.status)}</dd>
</dl>
${notice ? `<p class="error" role="alert">${escapeHtml(notice)}</p>` : ''}
${action}
<p><a href="/">Back to the dashboard</a></p>
</main>
</body>
</html>`;
}
