import { randomUUID } from 'node:crypto';
import { errorText, log } from '../log.js';
import { PLANS } from '../plans.js';
import { PaymentProviderError } from './errors.js';
import type { CreatedInvoice, InvoiceRequest, PaymentProvider } from './provider.js';

export interface NowPaymentsOptions {
  apiKey: string;
  ipnSecret: string;
  /** e.g. https://api.nowpayments.io/v1 (no trailing slash needed). */
  baseUrl: string;
  /** The service's public base URL: IPN callback and the pages the payer returns to. */
  publicUrl: string;
  /** Whole-request budget (connect, answer and body). */
  timeoutMs?: number;
}

/** NOWPayments REST client: `POST /invoice` (docs/BILLING.md). */
export class NowPaymentsProvider implements PaymentProvider {
  readonly name = 'nowpayments';
  readonly ipnSecret: string;
  private readonly endpoint: string;
  private readonly timeoutMs: number;

  constructor(private readonly options: NowPaymentsOptions) {
    this.ipnSecret = options.ipnSecret;
    this.endpoint = `${options.baseUrl.replace(/\/+$/, '')}/invoice`;
    this.timeoutMs = options.timeoutMs ?? 15_000;
  }

  async createInvoice(request: InvoiceRequest): Promise<CreatedInvoice> {
    // Our own reference, so an IPN must name both their invoice and our order to match (docs/BILLING.md).
    const orderId = `th-${randomUUID()}`;
    const { publicUrl } = this.options;
    const body = {
      price_amount: request.amount_usd,
      price_currency: 'usd',
      order_id: orderId,
      order_description: `tickhouse ${request.plan} plan (${PLANS[request.plan].duration_days} days)`,
      ipn_callback_url: `${publicUrl}/v1/billing/ipn`,
      success_url: `${publicUrl}/?payment=success`,
      cancel_url: `${publicUrl}/?payment=cancelled`,
    };
    const answer = await this.post(body);
    const id = typeof answer?.id === 'number' ? String(answer.id) : answer?.id;
    const url = answer?.invoice_url;
    if (typeof id !== 'string' || id === '' || typeof url !== 'string' || !/^https?:\/\//.test(url)) {
      log.warn('nowpayments invoice answer without id or invoice_url', { answer: JSON.stringify(answer).slice(0, 500) });
      throw new PaymentProviderError('The payment provider answered without an invoice id or URL; nothing was charged. Try again shortly.');
    }
    return { payment_id: id, order_id: orderId, invoice_url: url };
  }

  /** The parsed JSON answer of a 2xx; anything else (time-out, network, non-2xx, not JSON) is a PaymentProviderError. */
  private async post(body: object): Promise<Record<string, unknown> | null> {
    const seconds = this.timeoutMs / 1000;
    try {
      // One signal for the whole exchange: a server that sends headers and then stalls times out too.
      const response = await fetch(this.endpoint, {
        method: 'POST',
        headers: { 'x-api-key': this.options.apiKey, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const text = await response.text();
      if (!response.ok) {
        log.warn('nowpayments invoice refused', { status: response.status, body: text.slice(0, 500) });
        throw new PaymentProviderError(`The payment provider refused to create the invoice (HTTP ${response.status}); nothing was charged. Try again shortly.`);
      }
      try {
        const parsed: unknown = JSON.parse(text);
        return parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : null;
      } catch {
        log.warn('nowpayments invoice answer is not JSON', { body: text.slice(0, 500) });
        throw new PaymentProviderError('The payment provider answered with malformed JSON; nothing was charged. Try again shortly.');
      }
    } catch (err) {
      if (err instanceof PaymentProviderError) throw err;
      if (err instanceof Error && err.name === 'TimeoutError') {
        log.warn('nowpayments invoice timed out', { timeout_seconds: seconds });
        throw new PaymentProviderError(`The payment provider did not answer within ${seconds} s; nothing was charged. Try again shortly.`);
      }
      log.warn('nowpayments unreachable', { error: errorText(err) });
      throw new PaymentProviderError('The payment provider could not be reached; nothing was charged. Try again shortly.');
    }
  }
}
