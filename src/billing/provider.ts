import type { Invoice } from '../accounts/types.js';

/** What subscribe asks a payment processor for (docs/BILLING.md "Provider interface"). */
export interface InvoiceRequest {
  plan: Invoice['plan'];
  amount_usd: number;
  account_id: string;
}

export interface CreatedInvoice {
  /** The provider's invoice id; IPNs name it in `invoice_id`. */
  payment_id: string;
  /** The order reference sent at creation; IPNs echo it in `order_id`. */
  order_id: string;
  invoice_url: string;
}

export interface PaymentProvider {
  readonly name: 'nowpayments' | 'sandbox';
  /** Key of the IPN signatures this provider's callbacks carry. */
  readonly ipnSecret: string;
  /** Throws PaymentProviderError when the processor fails, times out or answers nonsense. */
  createInvoice(request: InvoiceRequest): Promise<CreatedInvoice>;
}
