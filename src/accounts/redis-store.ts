import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { log } from '../log.js';
import type { PlanName } from '../plans.js';
import { AccountNotFoundError, StoreUnavailableError } from './errors.js';
import type { AccountStore } from './store.js';
import type { Account, Invoice } from './types.js';

/**
 * AccountStore on Redis. Layout (one account's keys share the hash tag `{acct:<id>}`, so they live in
 * one Redis Cluster slot):
 *   {acct:<id>}                    hash   id, email?, plan, plan_expires_at?, created_at, key_hash
 *   {acct:<id>}:day:<YYYY-MM-DD>   string request counter of that UTC day, expires 2 days after its first use
 *   {acct:<id>}:invoices           zset   payment ids scored by created_at
 *   apikey:<sha256>                string account id (the plaintext key is never stored)
 *   invoice:{<payment_id>}         hash   the invoice record; :claimed marks the upgrade as applied
 *   reg:<ip>:<YYYY-MM-DDTHH>       string registrations from that IP in that hour
 *   accounts:count                 string number of accounts created
 * A key hash resolves only while the account's own `key_hash` still equals it, so switching that one
 * field is the atomic moment a regenerated key replaces the old one.
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

const SWAP_KEY_HASH = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local old = redis.call('HGET', KEYS[1], 'key_hash')
redis.call('HSET', KEYS[1], 'key_hash', ARGV[1])
return old`;

type Scripted = Redis & {
  consumeDaily(key: string, limit: number, ttl: number): Promise<[number, number]>;
  patchIfExists(key: string, ...args: (string | number)[]): Promise<string[] | null>;
  swapKeyHash(key: string, newHash: string): Promise<string | null>;
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
  redis.defineCommand('swapKeyHash', { numberOfKeys: 1, lua: SWAP_KEY_HASH });

  let lastErrorLog = 0;
  redis.on('error', (err: Error) => {
    if (Date.now() - lastErrorLog < 10_000) return;
    lastErrorLog = Date.now();
    log.warn('redis error', { error: err.message });
  });
  try {
    await redis.connect();
  } catch (err) {
    log.warn('redis unreachable at start; serving 503 on authenticated routes until it is back', { error: (err as Error).message });
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

  /** Every driver failure becomes a StoreUnavailableError (the 503 of API.md §6). */
  private async call<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      log.debug('account store call failed', { error: (err as Error).message });
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
      Promise.all([
        this.redis.hset(acctKey(account.id), { ...accountFields(account), key_hash: input.keyHash }),
        this.redis.set(apiKeyKey(input.keyHash), account.id),
        this.redis.incr('accounts:count'),
      ]),
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

  async replaceKey(accountId: string, newKeyHash: string) {
    await this.call(() => this.redis.set(apiKeyKey(newKeyHash), accountId));
    const old = await this.call(() => this.redis.swapKeyHash(acctKey(accountId), newKeyHash));
    if (old === null) throw new AccountNotFoundError(accountId);
    if (old !== newKeyHash) await this.call(() => this.redis.del(apiKeyKey(old)));
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
      Promise.all([
        this.redis.hset(invoiceKey(invoice.payment_id), invoiceFields(invoice)),
        this.redis.zadd(invoicesKey(invoice.account_id), invoice.created_at, invoice.payment_id),
      ]),
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

  async claimInvoiceUpgrade(paymentId: string) {
    return (await this.call(() => this.redis.set(`${invoiceKey(paymentId)}:claimed`, '1', 'NX'))) === 'OK';
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
