import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { log, errorText } from '../log.js';
import type { PlanName } from '../plans.js';
import { AccountNotFoundError, StoreUnavailableError } from './errors.js';
import type { AccountStore, PaidInvoice, PaidInvoiceOutcome } from './store.js';
import type { Account, Invoice } from './types.js';

/**
 * AccountStore on Redis. Layout (one account's keys share the hash tag `{acct:<id>}`, so they live in
 * one Redis Cluster slot):
 *   {acct:<id>}                    hash   id, email?, plan, plan_expires_at?, created_at, key_hash
 *   {acct:<id>}:day:<YYYY-MM-DD>   string request counter of that UTC day, expires 2 days after its first use
 *   {acct:<id>}:invoices           zset   payment ids scored by created_at
 *   apikey:<sha256>                string account id (the plaintext key is never stored)
 *   invoice:{<payment_id>}         hash   the invoice record; :claimed marks its purchase as applied
 *   reg:<ip>:<YYYY-MM-DDTHH>       string registrations from that IP in that hour
 *   accounts:count                 string number of accounts created
 * A key hash resolves only while the account's own `key_hash` still equals it, so switching that one
 * field is the atomic moment a regenerated key replaces the old one. Every change that spans keys is
 * one MULTI or one script, so a failure leaves all of it or none (the scripts span hash tags: one
 * Redis, not a Cluster).
 */
const DAY_SECONDS = 86_400;

const CONSUME_DAILY = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return {0, n} end
n = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {1, n}`;

/** HSET the pairs and HDEL the names after them, only if the hash exists; returns the hash or nil. */
const PATCH_IF_EXISTS = `
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
local n = tonumber(ARGV[1])
if n > 0 then redis.call('HSET', KEYS[1], unpack(ARGV, 2, 1 + n * 2)) end
for i = 2 + n * 2, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
return redis.call('HGETALL', KEYS[1])`;

/**
 * Compare-and-swap of the key: KEYS = account hash, old apikey, new apikey; ARGV = expected hash,
 * new hash, account id. 0 when the account's key is no longer the expected one.
 */
const REPLACE_KEY = `
if redis.call('HGET', KEYS[1], 'key_hash') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'key_hash', ARGV[2])
redis.call('SET', KEYS[3], ARGV[3])
redis.call('DEL', KEYS[2])
return 1`;

/**
 * A paid invoice's purchase, once: KEYS = account hash, invoice hash, its claimed marker; ARGV = the
 * plan and expiry the caller read ('' = none), the new plan and expiry, paid_at. 'changed' when the
 * account moved since it was read (the caller recomputes and retries).
 */
const APPLY_PAID_INVOICE = `
if redis.call('EXISTS', KEYS[3]) == 1 then return 'already_applied' end
local plan = redis.call('HGET', KEYS[1], 'plan')
if not plan then return 'no_account' end
if plan ~= ARGV[1] or (redis.call('HGET', KEYS[1], 'plan_expires_at') or '') ~= ARGV[2] then return 'changed' end
redis.call('HSET', KEYS[1], 'plan', ARGV[3], 'plan_expires_at', ARGV[4])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HSET', KEYS[2], 'paid_at', ARGV[5]) end
redis.call('SET', KEYS[3], '1')
return 'applied'`;

type Scripted = Redis & {
  consumeDaily(key: string, limit: number, ttl: number): Promise<[number, number]>;
  patchIfExists(key: string, ...args: (string | number)[]): Promise<string[] | null>;
  replaceKey(account: string, oldApiKey: string, newApiKey: string, expectedHash: string, newHash: string, accountId: string): Promise<number>;
  applyPaidInvoice(account: string, invoice: string, claimed: string, ...args: (string | number)[]): Promise<'applied' | 'already_applied' | 'no_account' | 'changed'>;
};

export interface RedisStoreOptions {
  /** Prepended to every key (tests isolate themselves with it). */
  keyPrefix?: string;
}

export async function openRedisStore(url: string, options: RedisStoreOptions = {}): Promise<AccountStore> {
  const redis = new Redis(url, {
    keyPrefix: options.keyPrefix,
    // Commands issued in the same tick (concurrent requests' counters) share one write and one read.
    enableAutoPipelining: true,
    lazyConnect: true,
    // Fail fast while Redis is down (the request gets a 503) instead of queueing commands forever...
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    // ...and keep reconnecting in the background so the service recovers by itself.
    retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
  }) as Scripted;
  redis.defineCommand('consumeDaily', { numberOfKeys: 1, lua: CONSUME_DAILY });
  redis.defineCommand('patchIfExists', { numberOfKeys: 1, lua: PATCH_IF_EXISTS });
  redis.defineCommand('replaceKey', { numberOfKeys: 3, lua: REPLACE_KEY });
  redis.defineCommand('applyPaidInvoice', { numberOfKeys: 3, lua: APPLY_PAID_INVOICE });

  let lastErrorLog = 0;
  redis.on('error', (err: Error) => {
    if (Date.now() - lastErrorLog < 10_000) return;
    lastErrorLog = Date.now();
    log.warn('redis error', { error: errorText(err) });
  });
  try {
    await redis.connect();
  } catch (err) {
    log.warn('redis unreachable at start; serving 503 on authenticated routes until it is back', { error: errorText(err) });
  }
  return new RedisAccountStore(redis);
}

const acctKey = (id: string) => `{acct:${id}}`;
const dayKey = (id: string, day: string) => `{acct:${id}}:day:${day}`;
const invoicesKey = (id: string) => `{acct:${id}}:invoices`;
const apiKeyKey = (hash: string) => `apikey:${hash}`;
const invoiceKey = (paymentId: string) => `invoice:{${paymentId}}`;

class RedisAccountStore implements AccountStore {
  readonly kind = 'redis' as const;
  constructor(private readonly redis: Scripted) {}

  /** Every driver failure becomes a StoreUnavailableError (the 503 of docs/API.md §6). */
  private async call<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      log.debug('account store call failed', { error: errorText(err) });
      throw new StoreUnavailableError({ cause: err });
    }
  }

  async ping() {
    return this.redis.ping().then((r) => r === 'PONG', () => false);
  }

  async close() {
    this.redis.disconnect();
  }

  async createAccount(input: { email: string | null; keyHash: string; plan: PlanName; plan_expires_at: number | null; now: number }) {
    const account: Account = { id: randomUUID(), email: input.email, plan: input.plan, plan_expires_at: input.plan_expires_at, created_at: input.now };
    await this.call(() =>
      this.redis
        .multi()
        .hset(acctKey(account.id), { ...accountFields(account), key_hash: input.keyHash })
        .set(apiKeyKey(input.keyHash), account.id)
        .incr('accounts:count')
        .exec(),
    );
    return account;
  }

  async getAccount(id: string) {
    const fields = await this.call(() => this.redis.hgetall(acctKey(id)));
    return fields.id ? parseAccount(fields) : null;
  }

  async countAccounts() {
    return Number((await this.call(() => this.redis.get('accounts:count'))) ?? 0);
  }

  async findByKeyHash(keyHash: string) {
    const id = await this.call(() => this.redis.get(apiKeyKey(keyHash)));
    if (!id) return null;
    const fields = await this.call(() => this.redis.hgetall(acctKey(id)));
    return fields.id && fields.key_hash === keyHash ? parseAccount(fields) : null;
  }

  async replaceKey(accountId: string, expectedKeyHash: string, newKeyHash: string) {
    const swapped = await this.call(() =>
      this.redis.replaceKey(acctKey(accountId), apiKeyKey(expectedKeyHash), apiKeyKey(newKeyHash), expectedKeyHash, newKeyHash, accountId),
    );
    return swapped === 1;
  }

  async setPlan(accountId: string, plan: PlanName, planExpiresAt: number | null) {
    const args = planExpiresAt === null ? [1, 'plan', plan, 'plan_expires_at'] : [2, 'plan', plan, 'plan_expires_at', planExpiresAt];
    const flat = await this.call(() => this.redis.patchIfExists(acctKey(accountId), ...args));
    if (!flat) throw new AccountNotFoundError(accountId);
    return parseAccount(pairsToObject(flat));
  }

  async getDaily(accountId: string, day: string) {
    return Number((await this.call(() => this.redis.get(dayKey(accountId, day)))) ?? 0);
  }

  async consumeDaily(accountId: string, day: string, limit: number) {
    const [allowed, count] = await this.call(() => this.redis.consumeDaily(dayKey(accountId, day), limit, 2 * DAY_SECONDS));
    return { allowed: allowed === 1, count };
  }

  async incrementRegistrations(ip: string, hour: string) {
    const key = `reg:${ip}:${hour}`;
    const result = await this.call(() => this.redis.multi().incr(key).expire(key, 2 * 3600).exec());
    return Number(result![0][1]);
  }

  async createInvoice(invoice: Invoice) {
    await this.call(() =>
      this.redis
        .multi()
        .hset(invoiceKey(invoice.payment_id), invoiceFields(invoice))
        .zadd(invoicesKey(invoice.account_id), invoice.created_at, invoice.payment_id)
        .exec(),
    );
  }

  async getInvoice(paymentId: string) {
    const fields = await this.call(() => this.redis.hgetall(invoiceKey(paymentId)));
    return fields.payment_id ? parseInvoice(fields) : null;
  }

  async updateInvoice(paymentId: string, patch: Partial<Pick<Invoice, 'status' | 'updated_at' | 'paid_at'>>) {
    const sets: (string | number)[] = [];
    const dels: string[] = [];
    for (const [name, value] of Object.entries(patch)) {
      if (value === undefined) continue;
      if (value === null) dels.push(name);
      else sets.push(name, value);
    }
    const flat = await this.call(() => this.redis.patchIfExists(invoiceKey(paymentId), sets.length / 2, ...sets, ...dels));
    return flat ? parseInvoice(pairsToObject(flat)) : null;
  }

  async listInvoices(accountId: string, limit: number) {
    const ids = await this.call(() => this.redis.zrevrange(invoicesKey(accountId), 0, limit - 1));
    if (!ids.length) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(invoiceKey(id));
    const results = await this.call(() => pipeline.exec());
    return results!.map(([, fields]) => fields as Record<string, string>).filter((f) => f.payment_id).map(parseInvoice);
  }

  /** Read, compute the expiry here (the rule lives in plan-change.ts), then compare-and-set; retried while another change lands in between. */
  async applyPaidInvoice(invoice: PaidInvoice, paidAt: number, expiryOf: (account: Account) => number): Promise<PaidInvoiceOutcome> {
    for (;;) {
      const account = await this.getAccount(invoice.account_id);
      if (!account) return { applied: false, reason: 'no_account' };
      const expiresAt = expiryOf(account);
      const result = await this.call(() =>
        this.redis.applyPaidInvoice(
          acctKey(invoice.account_id),
          invoiceKey(invoice.payment_id),
          `${invoiceKey(invoice.payment_id)}:claimed`,
          account.plan,
          account.plan_expires_at ?? '',
          invoice.plan,
          expiresAt,
          paidAt,
        ),
      );
      if (result === 'applied') return { applied: true, account: { ...account, plan: invoice.plan, plan_expires_at: expiresAt } };
      if (result !== 'changed') return { applied: false, reason: result };
    }
  }
}

function accountFields(a: Account): Record<string, string | number> {
  const fields: Record<string, string | number> = { id: a.id, plan: a.plan, created_at: a.created_at };
  if (a.email !== null) fields.email = a.email;
  if (a.plan_expires_at !== null) fields.plan_expires_at = a.plan_expires_at;
  return fields;
}

function parseAccount(f: Record<string, string>): Account {
  return {
    id: f.id,
    email: f.email ?? null,
    plan: f.plan as PlanName,
    plan_expires_at: f.plan_expires_at === undefined ? null : Number(f.plan_expires_at),
    created_at: Number(f.created_at),
  };
}

function invoiceFields(i: Invoice): Record<string, string | number> {
  const { paid_at, ...rest } = i;
  return paid_at === null ? rest : { ...rest, paid_at };
}

function parseInvoice(f: Record<string, string>): Invoice {
  return {
    payment_id: f.payment_id,
    account_id: f.account_id,
    plan: f.plan as Invoice['plan'],
    amount_usd: Number(f.amount_usd),
    order_id: f.order_id,
    status: f.status as Invoice['status'],
    created_at: Number(f.created_at),
    updated_at: Number(f.updated_at),
    paid_at: f.paid_at === undefined ? null : Number(f.paid_at),
  };
}

function pairsToObject(flat: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i]] = flat[i + 1];
  return out;
}
