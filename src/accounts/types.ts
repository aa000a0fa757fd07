import type { PlanName } from '../plans.js';

/** An account as stored. Times are Unix milliseconds. The API key itself is never stored. */
export interface Account {
  id: string;
  email: string | null;
  /** The plan last bought (or free); may have expired, see the effective plan. */
  plan: PlanName;
  /** null for free. */
  plan_expires_at: number | null;
  created_at: number;
}

export type InvoiceStatus =
  | 'waiting'
  | 'confirming'
  | 'confirmed'
  | 'sending'
  | 'partially_paid'
  | 'finished'
  /** Reported `finished`, but for another amount or currency than the invoice's: no upgrade. */
  | 'finished_mismatch'
  | 'failed'
  | 'refunded'
  | 'expired';

/** docs/BILLING.md "Invoice record". `payment_id` is the provider's invoice id. */
export interface Invoice {
  payment_id: string;
  account_id: string;
  plan: Exclude<PlanName, 'free'>;
  amount_usd: number;
  /** The order reference sent to the provider (the sandbox uses payment_id). */
  order_id: string;
  status: InvoiceStatus;
  created_at: number;
  updated_at: number;
  paid_at: number | null;
}
