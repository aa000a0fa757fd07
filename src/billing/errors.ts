/**
 * What billing reports in domain terms (docs/BILLING.md); http/render-error.ts decides what each becomes
 * on the wire.
 */

/** The processor could not create an invoice (failed, timed out, answered nonsense); nothing is recorded. */
export class PaymentProviderError extends Error {
  override name = 'PaymentProviderError';
}

/** An IPN whose `x-nowpayments-sig` is missing or does not cover its body: nothing in it is believed. */
export class IpnSignatureError extends Error {
  override name = 'IpnSignatureError';
}

/** A signed IPN that is not what docs/BILLING.md describes; `field` names the offending member (or `body`). */
export class IpnPayloadError extends Error {
  override name = 'IpnPayloadError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** An IPN that names no invoice of ours (its invoice_id and order_id must both match). */
export class InvoiceNotFoundError extends Error {
  override name = 'InvoiceNotFoundError';
}

/** No payment provider is configured (PAYMENTS=none, the default with a server backend): no plan can be bought here. */
export class PaymentsUnavailableError extends Error {
  override name = 'PaymentsUnavailableError';
}
