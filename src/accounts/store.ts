import type { PlanName } from '../plans.js';
import type { Account, Invoice } from './types.js';

/**
 * Accounts, key hashes, per-UTC-day counters and invoices. Two implementations with identical
 * behaviour: Redis or a Redis Cluster (REDIS_URL) and the embedded store persisted under DATA_DIR. A
 * store that cannot reach its backend throws StoreUnavailableError, a change to an unknown account
 * AccountNotFoundError (accounts/errors.ts; never a raw driver error).
 */
export interface AccountStore {
  readonly kind: 'redis' | 'embedded';
  ping(): Promise<boolean>;
  close(): Promise<void>;

  createAccount(input: { email: string | null; keyHash: string; plan: PlanName; plan_expires_at: number | null; now: number }): Promise<Account>;
  getAccount(id: string): Promise<Account | null>;
  /** How many accounts exist (the embedded first start prints a demo key when there are none). */
  countAccounts(): Promise<number>;
  findByKeyHash(keyHash: string): Promise<Account | null>;
  /**
   * Compare-and-swap of the account's key hash: only while it is still `expectedKeyHash` does it
   * become `newKeyHash` (the old one stops resolving at once). False when another regeneration won,
   * so of concurrent regenerations with one key exactly one succeeds. True again, changing nothing,
   * when the key hash already is `newKeyHash` (the same swap resent after its reply was lost).
   */
  replaceKey(accountId: string, expectedKeyHash: string, newKeyHash: string): Promise<boolean>;
  setPlan(accountId: string, plan: PlanName, planExpiresAt: number | null): Promise<Account>;

  /** The account's request counter for `day` (YYYY-MM-DD, UTC). */
  getDaily(accountId: string, day: string): Promise<number>;
  /**
   * The daily-limit check in one atomic step: increments the counter for `day` only while it is
   * below `limit` (a request refused with 429 does not count). `count` is the counter afterwards
   * (unchanged when `allowed` is false). The counter expires after its day.
   */
  consumeDaily(accountId: string, day: string, limit: number): Promise<{ allowed: boolean; count: number }>;
  /**
   * Gives back one counted request of `day` (never below 0): an export the service failed to write
   * (docs/API.md §2) is not counted.
   */
  refundDaily(accountId: string, day: string): Promise<void>;
  /**
   * One of the account's slots for heavy requests (exports, Tardis files and slices, replays; docs/API.md
   * §2): `lease` is taken only while fewer than `limit` of the account's leases are unexpired. A lease
   * lasts `ttlMs` from when it was taken or last renewed, so one a crashed process held frees itself.
   * True when taken. Redis holds them for every process (replica) of the service.
   */
  takeSlot(accountId: string, lease: string, limit: number, ttlMs: number): Promise<boolean>;
  /** Extends the account's `leases` that still exist to `ttlMs` from now (requests still running). */
  renewSlots(accountId: string, leases: string[], ttlMs: number): Promise<void>;
  releaseSlot(accountId: string, lease: string): Promise<void>;
  /** Registration flood guard: increments and returns the count for `ip` in window `hour`. */
  incrementRegistrations(ip: string, hour: string): Promise<number>;

  createInvoice(invoice: Invoice): Promise<void>;
  getInvoice(paymentId: string): Promise<Invoice | null>;
  updateInvoice(paymentId: string, patch: Partial<Pick<Invoice, 'status' | 'updated_at' | 'paid_at'>>): Promise<Invoice | null>;
  /** Newest first. */
  listInvoices(accountId: string, limit: number): Promise<Invoice[]>;
  /**
   * The purchase of a paid invoice, in one atomic step and at most once per invoice, whichever
   * process (replica) asks: sets the invoice's plan on the account with the expiry `expiryOf`
   * computes from the account as it is at that moment, marks the invoice applied and sets its
   * `paid_at`. IPN retries and races get `already_applied`.
   */
  applyPaidInvoice(invoice: PaidInvoice, paidAt: number, expiryOf: (account: Account) => number): Promise<PaidInvoiceOutcome>;
}

export type PaidInvoice = Pick<Invoice, 'payment_id' | 'account_id' | 'plan'>;

export type PaidInvoiceOutcome = { applied: true; account: Account } | { applied: false; reason: 'already_applied' | 'no_account' };
