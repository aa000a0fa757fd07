import type { PlanName } from '../plans.js';
import type { AccountStore, PaidInvoice } from './store.js';
import type { Account, Invoice } from './types.js';

/**
 * Wraps a store so key → account lookups (one per authenticated request) are answered from memory
 * for up to `ttlMs`. Regenerating a key or changing a plan through the wrapped store drops the
 * entry at once, so this process never serves an old key or an old plan; other processes see the
 * change within `ttlMs`. The TTL runs on the monotonic clock: it bounds staleness, it is not
 * business time.
 */
export function withLookupCache(store: AccountStore, ttlMs = 3_000): AccountStore {
  return new CachedAccountStore(store, ttlMs);
}

class CachedAccountStore implements AccountStore {
  private readonly byKeyHash = new Map<string, { account: Account; until: number }>();
  readonly kind: AccountStore['kind'];

  constructor(
    private readonly store: AccountStore,
    private readonly ttlMs: number,
  ) {
    this.kind = store.kind;
  }

  async findByKeyHash(keyHash: string) {
    const hit = this.byKeyHash.get(keyHash);
    if (hit && hit.until > performance.now()) return hit.account;
    const account = await this.store.findByKeyHash(keyHash);
    if (account) this.remember(keyHash, account);
    else this.byKeyHash.delete(keyHash);
    return account;
  }

  async replaceKey(accountId: string, expectedKeyHash: string, newKeyHash: string) {
    this.drop(accountId);
    const replaced = await this.store.replaceKey(accountId, expectedKeyHash, newKeyHash);
    this.drop(accountId);
    return replaced;
  }

  async setPlan(accountId: string, plan: PlanName, planExpiresAt: number | null) {
    this.drop(accountId);
    const account = await this.store.setPlan(accountId, plan, planExpiresAt);
    this.drop(accountId);
    return account;
  }

  async applyPaidInvoice(invoice: PaidInvoice, paidAt: number, expiryOf: (account: Account) => number) {
    this.drop(invoice.account_id);
    const outcome = await this.store.applyPaidInvoice(invoice, paidAt, expiryOf);
    this.drop(invoice.account_id);
    return outcome;
  }

  private remember(keyHash: string, account: Account) {
    const now = performance.now();
    // Entries are only replaced on access; sweep the expired ones before the map grows large.
    if (this.byKeyHash.size >= 10_000) for (const [hash, entry] of this.byKeyHash) if (entry.until <= now) this.byKeyHash.delete(hash);
    this.byKeyHash.set(keyHash, { account, until: now + this.ttlMs });
  }

  private drop(accountId: string) {
    for (const [hash, entry] of this.byKeyHash) if (entry.account.id === accountId) this.byKeyHash.delete(hash);
  }

  ping = () => this.store.ping();
  close = () => this.store.close();
  createAccount = (input: Parameters<AccountStore['createAccount']>[0]) => this.store.createAccount(input);
  getAccount = (id: string) => this.store.getAccount(id);
  countAccounts = () => this.store.countAccounts();
  getDaily = (accountId: string, day: string) => this.store.getDaily(accountId, day);
  consumeDaily = (accountId: string, day: string, limit: number) => this.store.consumeDaily(accountId, day, limit);
  refundDaily = (accountId: string, day: string) => this.store.refundDaily(accountId, day);
  takeSlot = (accountId: string, lease: string, limit: number, ttlMs: number) => this.store.takeSlot(accountId, lease, limit, ttlMs);
  renewSlots = (accountId: string, leases: string[], ttlMs: number) => this.store.renewSlots(accountId, leases, ttlMs);
  releaseSlot = (accountId: string, lease: string) => this.store.releaseSlot(accountId, lease);
  incrementRegistrations = (ip: string, hour: string) => this.store.incrementRegistrations(ip, hour);
  createInvoice = (invoice: Invoice) => this.store.createInvoice(invoice);
  getInvoice = (paymentId: string) => this.store.getInvoice(paymentId);
  updateInvoice = (paymentId: string, patch: Parameters<AccountStore['updateInvoice']>[1]) => this.store.updateInvoice(paymentId, patch);
  listInvoices = (accountId: string, limit: number) => this.store.listInvoices(accountId, limit);
}
