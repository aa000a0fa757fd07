import { expiryAfterPurchase } from '../accounts/plan-change.js';
import type { AccountStore } from '../accounts/store.js';
import type { Invoice, InvoiceStatus } from '../accounts/types.js';
import type { Clock } from '../clock.js';
import { log } from '../log.js';
import { InvoiceNotFoundError, IpnPayloadError, IpnSignatureError } from './errors.js';
import { verifyIpnSignature } from './signature.js';

/** IPN handling (docs/BILLING.md "IPN callback"): verify, match, record the status, upgrade once on `finished`. */

export const IPN_STATUSES: readonly InvoiceStatus[] = [
  'waiting',
  'confirming',
  'confirmed',
  'sending',
  'partially_paid',
  'finished',
  'failed',
  'refunded',
  'expired',
];
/** Progress reports that a late or retried IPN may deliver after the payment; they must not hide how it ended. */
const BEFORE_FINISHED = new Set<InvoiceStatus>(['waiting', 'confirming', 'confirmed', 'sending', 'partially_paid']);
const SETTLED = new Set<InvoiceStatus>(['finished', 'finished_mismatch']);

export interface IpnOutcome {
  payment_id: string;
  /** The status the invoice holds now. */
  status: InvoiceStatus;
  /** True only for the one IPN that applied the plan change. */
  upgraded: boolean;
}

interface IpnDeps {
  accounts: AccountStore;
  clock: Clock;
}

export async function handleIpn(deps: IpnDeps, secret: string, rawBody: string, signature: string | undefined): Promise<IpnOutcome> {
  if (!signature) throw new IpnSignatureError('The x-nowpayments-sig header is required.');
  const body = parseObject(rawBody);
  if (!verifyIpnSignature(body, signature, secret)) {
    throw new IpnSignatureError('The x-nowpayments-sig signature does not match the body.');
  }

  const status = body.payment_status;
  if (typeof status !== 'string' || !IPN_STATUSES.includes(status as InvoiceStatus)) {
    throw new IpnPayloadError('payment_status', `payment_status must be one of ${IPN_STATUSES.join(', ')}`);
  }
  const invoice = await findInvoice(deps, body);
  return record(deps, invoice, status as InvoiceStatus, body);
}

function parseObject(rawBody: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(rawBody);
  } catch {
    throw new IpnPayloadError('body', 'The IPN body must be a JSON object.');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new IpnPayloadError('body', 'The IPN body must be a JSON object.');
  return body as Record<string, unknown>;
}

/** Their `invoice_id` must be the id we returned and their `order_id` the reference we sent. */
async function findInvoice(deps: Pick<IpnDeps, 'accounts'>, body: Record<string, unknown>): Promise<Invoice> {
  const invoiceId = idText(body.invoice_id);
  const orderId = idText(body.order_id);
  const invoice = invoiceId === null ? null : await deps.accounts.getInvoice(invoiceId);
  if (!invoice || invoice.order_id !== orderId) {
    throw new InvoiceNotFoundError(
      `No invoice matches invoice_id ${JSON.stringify(body.invoice_id ?? null)} and order_id ${JSON.stringify(body.order_id ?? null)}.`,
    );
  }
  return invoice;
}

const idText = (value: unknown) => (typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : null);

async function record(deps: IpnDeps, invoice: Invoice, reported: InvoiceStatus, body: Record<string, unknown>): Promise<IpnOutcome> {
  const now = deps.clock.now();
  // A `finished` for another amount or currency is not this invoice's payment: recorded as what it is.
  const status = reported === 'finished' && !paysInFull(invoice, body) ? 'finished_mismatch' : reported;
  const kept = SETTLED.has(invoice.status) && BEFORE_FINISHED.has(status) ? invoice.status : status;
  await deps.accounts.updateInvoice(invoice.payment_id, { status: kept, updated_at: now });
  const outcome = { payment_id: invoice.payment_id, status: kept, upgraded: false };
  if (status === 'finished_mismatch') {
    log.warn('ipn finished with another amount or currency; not upgrading', {
      payment_id: invoice.payment_id,
      expected_usd: invoice.amount_usd,
      price_amount: body.price_amount,
      price_currency: body.price_currency,
    });
  }
  if (status !== 'finished') return outcome;

  // Renewal extends from the current expiry, another plan starts now (docs/API.md §2, accounts/plan-change.ts);
  // the store applies it once per invoice, atomically, whichever replica gets the IPN.
  const applied = await deps.accounts.applyPaidInvoice(invoice, now, (account) => expiryAfterPurchase(account, invoice.plan, now));
  if (!applied.applied) {
    if (applied.reason === 'no_account') log.error('paid invoice of a missing account', { payment_id: invoice.payment_id, account_id: invoice.account_id });
    return outcome;
  }
  const { account } = applied;
  log.info('plan paid', { account_id: account.id, payment_id: invoice.payment_id, plan: account.plan, plan_expires_at: account.plan_expires_at });
  return { ...outcome, upgraded: true };
}

/** Amount (number or numeric string, compared in cents) and currency must be what the invoice asked for. */
function paysInFull(invoice: Invoice, body: Record<string, unknown>): boolean {
  const raw = body.price_amount;
  const amount = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
  const currency = typeof body.price_currency === 'string' ? body.price_currency.toLowerCase() : null;
  return Number.isFinite(amount) && Math.round(amount * 100) === Math.round(invoice.amount_usd * 100) && currency === 'usd';
}
