import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorText, log } from '../log.js';
import type { PlanName } from '../plans.js';
import { AccountNotFoundError, StoreUnavailableError } from './errors.js';
import { FileWriter } from './file-writer.js';
import type { AccountStore, PaidInvoice, PaidInvoiceOutcome } from './store.js';
import type { Account, Invoice } from './types.js';

/**
 * AccountStore for a single process without Redis: everything in memory, persisted to
 * `DATA_DIR/accounts.json` by writing a temporary file and renaming it over the old one (a crash
 * leaves the old or the new file, never half of one). Account, key and invoice changes take effect
 * only once they are on disk (a refused write changes nothing, see commit()); request counters are
 * flushed at most a second later and on close.
 * `accounts.lock` keeps a second process (e.g. the admin CLI while the service runs) from
 * overwriting the file with its own stale copy.
 */
const COUNTER_FLUSH_MS = 1_000;

interface StoredAccount extends Account {
  key_hash: string;
}

interface Snapshot {
  version: 1;
  accounts: StoredAccount[];
  /** `<account id>|<YYYY-MM-DD>` → requests that day. */
  counters: Record<string, number>;
  /** `<ip>|<YYYY-MM-DDTHH>` → registrations that hour. */
  registrations: Record<string, number>;
  invoices: Invoice[];
  claimed: string[];
}

export class AccountStoreLockedError extends Error {
  constructor(dir: string, pid: number) {
    super(
      `The embedded account store in ${dir} is in use by another process (pid ${pid}). ` +
        'Stop that process first, or set REDIS_URL so several processes can share the accounts.',
    );
    this.name = 'AccountStoreLockedError';
  }
}

export async function openEmbeddedStore(dataDir: string): Promise<AccountStore> {
  mkdirSync(dataDir, { recursive: true });
  takeLock(dataDir);
  return new EmbeddedAccountStore(dataDir, readSnapshot(join(dataDir, 'accounts.json')));
}

function takeLock(dir: string) {
  const lockFile = join(dir, 'accounts.lock');
  let holder = NaN;
  try {
    holder = Number(readFileSync(lockFile, 'utf8'));
  } catch {
    // No lock file: nobody holds the store.
  }
  if (Number.isInteger(holder) && holder !== process.pid && isAlive(holder)) throw new AccountStoreLockedError(dir, holder);
  writeFileSync(lockFile, String(process.pid));
}

function isAlive(pid: number) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readSnapshot(file: string): Snapshot {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`Cannot read the account store ${file}: ${(err as Error).message}`);
    return { version: 1, accounts: [], counters: {}, registrations: {}, invoices: [], claimed: [] };
  }
}

/** Accounts, keys and invoices: changed only by commit(), never before their snapshot is on disk. */
interface Durable {
  accounts: Map<string, StoredAccount>;
  byKeyHash: Map<string, string>;
  invoices: Map<string, Invoice>;
  /** Payment ids whose purchase has been applied to their account. */
  claimed: Set<string>;
}

/** A mutation's answer when it changed nothing: no snapshot is written for it. */
class Unchanged<T> {
  constructor(readonly value: T) {}
}
const unchanged = <T>(value: T) => new Unchanged(value);

class EmbeddedAccountStore implements AccountStore {
  readonly kind = 'embedded' as const;
  private readonly file: string;
  private durable: Durable;
  private readonly counters: Map<string, number>;
  /** Heavy-request leases per account: lease → when it expires (performance.now ms). */
  private readonly slots = new Map<string, Map<string, number>>();
  private readonly registrations: Map<string, number>;
  private flushTimer: NodeJS.Timeout | undefined;
  /** Writes run one after another so an older snapshot never lands after a newer one. */
  private writing: Promise<void> = Promise.resolve();
  private closed = false;
  /** Every write of the store and its readiness probe, off libuv's pool (file-writer.ts). */
  private readonly files = new FileWriter();

  constructor(
    private readonly dir: string,
    snapshot: Snapshot,
  ) {
    this.file = join(dir, 'accounts.json');
    this.durable = {
      accounts: new Map(snapshot.accounts.map((a) => [a.id, a])),
      byKeyHash: new Map(snapshot.accounts.map((a) => [a.key_hash, a.id])),
      invoices: new Map(snapshot.invoices.map((i) => [i.payment_id, i])),
      claimed: new Set(snapshot.claimed),
    };
    this.counters = new Map(Object.entries(snapshot.counters));
    this.registrations = new Map(Object.entries(snapshot.registrations));
  }

  /**
   * Ready only while a snapshot could be written now: the probe creates, fills, syncs and removes a
   * file beside the store (a full disk or a read-only directory fails it). A file of its own, so it
   * never waits in the queue of account writes nor holds one up.
   */
  async ping() {
    if (this.closed) return false;
    return this.files.probe(`${this.file}.${process.pid}.probe`).then(
      () => true,
      (err) => {
        log.warn('account store is not writable', { file: this.file, error: errorText(err) });
        return false;
      },
    );
  }

  async close() {
    if (this.closed) return;
    clearTimeout(this.flushTimer);
    await this.flush();
    await this.files.close();
    this.closed = true;
    rmSync(join(this.dir, 'accounts.lock'), { force: true });
  }

  async createAccount(input: { email: string | null; keyHash: string; plan: PlanName; plan_expires_at: number | null; now: number }) {
    const account: Account = { id: randomUUID(), email: input.email, plan: input.plan, plan_expires_at: input.plan_expires_at, created_at: input.now };
    return this.commit((draft) => {
      draft.accounts.set(account.id, { ...account, key_hash: input.keyHash });
      draft.byKeyHash.set(input.keyHash, account.id);
      return account;
    });
  }

  async getAccount(id: string) {
    const stored = this.durable.accounts.get(id);
    return stored ? publicAccount(stored) : null;
  }

  async countAccounts() {
    return this.durable.accounts.size;
  }

  async findByKeyHash(keyHash: string) {
    const id = this.durable.byKeyHash.get(keyHash);
    return id === undefined ? null : this.getAccount(id);
  }

  async replaceKey(accountId: string, expectedKeyHash: string, newKeyHash: string) {
    return this.commit((draft) => {
      const stored = draft.accounts.get(accountId);
      if (stored?.key_hash === newKeyHash) return unchanged(true);
      if (!stored || stored.key_hash !== expectedKeyHash) return unchanged(false);
      draft.byKeyHash.delete(stored.key_hash);
      stored.key_hash = newKeyHash;
      draft.byKeyHash.set(newKeyHash, accountId);
      return true;
    });
  }

  async setPlan(accountId: string, plan: PlanName, planExpiresAt: number | null) {
    return this.commit((draft) => {
      const stored = mustGet(draft, accountId);
      stored.plan = plan;
      stored.plan_expires_at = planExpiresAt;
      return publicAccount(stored);
    });
  }

  async applyPaidInvoice(invoice: PaidInvoice, paidAt: number, expiryOf: (account: Account) => number): Promise<PaidInvoiceOutcome> {
    return this.commit<PaidInvoiceOutcome>((draft) => {
      if (draft.claimed.has(invoice.payment_id)) return unchanged({ applied: false, reason: 'already_applied' });
      const stored = draft.accounts.get(invoice.account_id);
      if (!stored) return unchanged({ applied: false, reason: 'no_account' });
      stored.plan_expires_at = expiryOf(publicAccount(stored));
      stored.plan = invoice.plan;
      draft.claimed.add(invoice.payment_id);
      const record = draft.invoices.get(invoice.payment_id);
      if (record) record.paid_at = paidAt;
      return { applied: true, account: publicAccount(stored) };
    });
  }

  async getDaily(accountId: string, day: string) {
    return this.counters.get(`${accountId}|${day}`) ?? 0;
  }

  async consumeDaily(accountId: string, day: string, limit: number) {
    const count = this.counters.get(`${accountId}|${day}`) ?? 0;
    if (count >= limit) return { allowed: false, count };
    return { allowed: true, count: this.increment(this.counters, `${accountId}|${day}`) };
  }

  async refundDaily(accountId: string, day: string) {
    const key = `${accountId}|${day}`;
    const count = this.counters.get(key) ?? 0;
    if (count > 0) this.counters.set(key, count - 1);
  }

  // Slots live in memory only: this store belongs to one process, and a restart ends every request.
  async takeSlot(accountId: string, lease: string, limit: number, ttlMs: number) {
    const now = performance.now();
    const leases = this.slots.get(accountId) ?? new Map<string, number>();
    for (const [held, until] of leases) if (until <= now) leases.delete(held);
    if (leases.size >= limit) return false;
    leases.set(lease, now + ttlMs);
    this.slots.set(accountId, leases);
    return true;
  }

  async renewSlots(accountId: string, leases: string[], ttlMs: number) {
    const held = this.slots.get(accountId);
    for (const lease of leases) if (held?.has(lease)) held.set(lease, performance.now() + ttlMs);
  }

  async releaseSlot(accountId: string, lease: string) {
    const held = this.slots.get(accountId);
    held?.delete(lease);
    if (held?.size === 0) this.slots.delete(accountId);
  }

  async incrementRegistrations(ip: string, hour: string) {
    return this.increment(this.registrations, `${ip}|${hour}`);
  }

  async createInvoice(invoice: Invoice) {
    await this.commit((draft) => {
      draft.invoices.set(invoice.payment_id, { ...invoice });
    });
  }

  async getInvoice(paymentId: string) {
    const invoice = this.durable.invoices.get(paymentId);
    return invoice ? { ...invoice } : null;
  }

  async updateInvoice(paymentId: string, patch: Partial<Pick<Invoice, 'status' | 'updated_at' | 'paid_at'>>) {
    return this.commit((draft) => {
      const invoice = draft.invoices.get(paymentId);
      if (!invoice) return unchanged(null);
      for (const [name, value] of Object.entries(patch)) if (value !== undefined) Object.assign(invoice, { [name]: value });
      return { ...invoice };
    });
  }

  async listInvoices(accountId: string, limit: number) {
    return [...this.durable.invoices.values()]
      .filter((i) => i.account_id === accountId)
      .sort((a, b) => b.created_at - a.created_at || (a.payment_id < b.payment_id ? 1 : -1))
      .slice(0, limit)
      .map((i) => ({ ...i }));
  }

  /**
   * The one way accounts, keys and invoices change: `mutate` edits a copy of them, the copy's snapshot
   * is written, and only then does the copy become the state. A failed write (disk full, read-only)
   * leaves everything as it was and answers 503. Mutations queue behind the writes, so each one
   * starts from the state its predecessor committed.
   */
  private commit<T>(mutate: (draft: Durable) => T | Unchanged<T>): Promise<T> {
    const run = this.writing.then(async () => {
      const draft = structuredClone(this.durable);
      const result = mutate(draft);
      if (result instanceof Unchanged) return result.value;
      await this.write(draft);
      this.durable = draft;
      return result;
    });
    this.writing = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  /** Counter changes: in memory now, on disk within COUNTER_FLUSH_MS. */
  private increment(map: Map<string, number>, key: string) {
    const value = (map.get(key) ?? 0) + 1;
    map.set(key, value);
    this.flushTimer ??= setTimeout(() => {
      this.flush().catch((err) => log.error('account store flush failed', { error: errorText(err) }));
    }, COUNTER_FLUSH_MS).unref();
    return value;
  }

  /** Writes the committed state with the counters of now (counter changes ride along with any write). */
  private flush(): Promise<void> {
    const write = this.writing.then(() => this.write(this.durable));
    this.writing = write.catch(() => {});
    return write;
  }

  private async write(durable: Durable) {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    try {
      await this.files.replace(this.file, `${this.file}.${process.pid}.tmp`, JSON.stringify(this.snapshot(durable)));
    } catch (err) {
      log.error('account store write failed', { file: this.file, error: errorText(err) });
      throw new StoreUnavailableError({ cause: err });
    }
  }

  private snapshot(durable: Durable): Snapshot {
    return {
      version: 1,
      accounts: [...durable.accounts.values()],
      counters: Object.fromEntries(pruneToRecent(this.counters)),
      registrations: Object.fromEntries(pruneToRecent(this.registrations)),
      invoices: [...durable.invoices.values()],
      claimed: [...durable.claimed],
    };
  }
}

function mustGet(durable: Durable, accountId: string) {
  const stored = durable.accounts.get(accountId);
  if (!stored) throw new AccountNotFoundError(accountId);
  return stored;
}

/**
 * Counters of past periods are dead weight (Redis expires them): keep the newest period seen and the
 * one before it. Keys end in `|<YYYY-MM-DD>` or `|<YYYY-MM-DDTHH>`, which sort chronologically as text.
 */
function pruneToRecent(map: Map<string, number>): Map<string, number> {
  const periodOf = (key: string) => key.slice(key.lastIndexOf('|') + 1);
  const keep = new Set([...new Set([...map.keys()].map(periodOf))].sort().slice(-2));
  for (const key of map.keys()) if (!keep.has(periodOf(key))) map.delete(key);
  return map;
}

function publicAccount({ key_hash: _hash, ...account }: StoredAccount): Account {
  return { ...account };
}
