import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { serviceUnavailable } from '../http/errors.js';
import { log } from '../log.js';
import type { PlanName } from '../plans.js';
import type { AccountStore } from './store.js';
import type { Account, Invoice } from './types.js';

/**
 * AccountStore for a single process without Redis: everything in memory, persisted to
 * `DATA_DIR/accounts.json` by writing a temporary file and renaming it over the old one (a crash
 * leaves the old or the new file, never half of one). Account and invoice changes are on disk before
 * the call returns; request counters are flushed at most a second later and on close.
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

class EmbeddedAccountStore implements AccountStore {
  readonly kind = 'embedded' as const;
  private readonly file: string;
  private readonly accounts = new Map<string, StoredAccount>();
  private readonly byKeyHash = new Map<string, string>();
  private readonly counters: Map<string, number>;
  private readonly registrations: Map<string, number>;
  private readonly invoices = new Map<string, Invoice>();
  private readonly claimed: Set<string>;
  private flushTimer: NodeJS.Timeout | undefined;
  /** Writes run one after another so an older snapshot never lands after a newer one. */
  private writing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly dir: string, snapshot: Snapshot) {
    this.file = join(dir, 'accounts.json');
    for (const a of snapshot.accounts) {
      this.accounts.set(a.id, a);
      this.byKeyHash.set(a.key_hash, a.id);
    }
    this.counters = new Map(Object.entries(snapshot.counters));
    this.registrations = new Map(Object.entries(snapshot.registrations));
    for (const i of snapshot.invoices) this.invoices.set(i.payment_id, i);
    this.claimed = new Set(snapshot.claimed);
  }

  /**
   * Ready only while a snapshot could be written now: the probe creates, fills, syncs and removes
   * the very temporary file a write uses (a full disk or a read-only directory fails it), in turn
   * with the writes so it never meets one halfway.
   */
  async ping() {
    if (this.closed) return false;
    const probe = this.writing.then(() => probeWritable(tempFileOf(this.file)));
    this.writing = probe.catch(() => {});
    return probe.then(
      () => true,
      (err) => {
        log.warn('account store is not writable', { file: this.file, error: (err as Error).message });
        return false;
      },
    );
  }

  async close() {
    if (this.closed) return;
    clearTimeout(this.flushTimer);
    await this.flush();
    this.closed = true;
    rmSync(join(this.dir, 'accounts.lock'), { force: true });
  }

  async createAccount(input: { email: string | null; keyHash: string; plan: PlanName; plan_expires_at: number | null; now: number }) {
    const account: Account = { id: randomUUID(), email: input.email, plan: input.plan, plan_expires_at: input.plan_expires_at, created_at: input.now };
    this.accounts.set(account.id, { ...account, key_hash: input.keyHash });
    this.byKeyHash.set(input.keyHash, account.id);
    await this.flush();
    return account;
  }

  async getAccount(id: string) {
    const stored = this.accounts.get(id);
    return stored ? publicAccount(stored) : null;
  }

  async countAccounts() {
    return this.accounts.size;
  }

  async findByKeyHash(keyHash: string) {
    const id = this.byKeyHash.get(keyHash);
    return id === undefined ? null : this.getAccount(id);
  }

  async replaceKey(accountId: string, newKeyHash: string) {
    const stored = this.mustGet(accountId);
    this.byKeyHash.delete(stored.key_hash);
    stored.key_hash = newKeyHash;
    this.byKeyHash.set(newKeyHash, accountId);
    await this.flush();
  }

  async setPlan(accountId: string, plan: PlanName, planExpiresAt: number | null) {
    const stored = this.mustGet(accountId);
    stored.plan = plan;
    stored.plan_expires_at = planExpiresAt;
    await this.flush();
    return publicAccount(stored);
  }

  async incrementDaily(accountId: string, day: string) {
    return this.bump(this.counters, `${accountId}|${day}`, 1);
  }

  async decrementDaily(accountId: string, day: string) {
    this.bump(this.counters, `${accountId}|${day}`, -1);
  }

  async getDaily(accountId: string, day: string) {
    return this.counters.get(`${accountId}|${day}`) ?? 0;
  }

  async consumeDaily(accountId: string, day: string, limit: number) {
    const count = this.counters.get(`${accountId}|${day}`) ?? 0;
    if (count >= limit) return { allowed: false, count };
    return { allowed: true, count: this.bump(this.counters, `${accountId}|${day}`, 1) };
  }

  async incrementRegistrations(ip: string, hour: string) {
    return this.bump(this.registrations, `${ip}|${hour}`, 1);
  }

  async createInvoice(invoice: Invoice) {
    this.invoices.set(invoice.payment_id, { ...invoice });
    await this.flush();
  }

  async getInvoice(paymentId: string) {
    const invoice = this.invoices.get(paymentId);
    return invoice ? { ...invoice } : null;
  }

  async updateInvoice(paymentId: string, patch: Partial<Pick<Invoice, 'status' | 'updated_at' | 'paid_at'>>) {
    const invoice = this.invoices.get(paymentId);
    if (!invoice) return null;
    for (const [name, value] of Object.entries(patch)) if (value !== undefined) Object.assign(invoice, { [name]: value });
    await this.flush();
    return { ...invoice };
  }

  async listInvoices(accountId: string, limit: number) {
    return [...this.invoices.values()]
      .filter((i) => i.account_id === accountId)
      .sort((a, b) => b.created_at - a.created_at || (a.payment_id < b.payment_id ? 1 : -1))
      .slice(0, limit)
      .map((i) => ({ ...i }));
  }

  async claimInvoiceUpgrade(paymentId: string) {
    if (this.claimed.has(paymentId)) return false;
    this.claimed.add(paymentId);
    await this.flush();
    return true;
  }

  private mustGet(accountId: string) {
    const stored = this.accounts.get(accountId);
    if (!stored) throw new Error(`No account ${accountId}`);
    return stored;
  }

  /** Counter changes: in memory now, on disk within COUNTER_FLUSH_MS. */
  private bump(map: Map<string, number>, key: string, by: number) {
    const value = Math.max(0, (map.get(key) ?? 0) + by);
    map.set(key, value);
    this.flushTimer ??= setTimeout(() => {
      this.flush().catch((err) => log.error('account store flush failed', { error: (err as Error).message }));
    }, COUNTER_FLUSH_MS).unref();
    return value;
  }

  private flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const body = JSON.stringify(this.snapshot());
    const write = this.writing.then(() => writeAtomically(this.file, body));
    this.writing = write.catch(() => {});
    return write.catch((err) => {
      log.error('account store write failed', { file: this.file, error: (err as Error).message });
      throw serviceUnavailable('The account store');
    });
  }

  private snapshot(): Snapshot {
    return {
      version: 1,
      accounts: [...this.accounts.values()],
      counters: Object.fromEntries(pruneToRecent(this.counters)),
      registrations: Object.fromEntries(pruneToRecent(this.registrations)),
      invoices: [...this.invoices.values()],
      claimed: [...this.claimed],
    };
  }
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

const tempFileOf = (file: string) => `${file}.${process.pid}.tmp`;

async function writeSynced(path: string, body: string) {
  const handle = await open(path, 'w');
  try {
    await handle.writeFile(body);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function writeAtomically(file: string, body: string) {
  const tmp = tempFileOf(file);
  await writeSynced(tmp, body);
  await rename(tmp, file);
}

async function probeWritable(tmp: string) {
  await writeSynced(tmp, 'probe');
  await unlink(tmp);
}

function publicAccount({ key_hash: _hash, ...account }: StoredAccount): Account {
  return { ...account };
}
