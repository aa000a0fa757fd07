import { randomUUID } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { errorText, log } from '../log.js';
import type { PlanName } from '../plans.js';
import { AccountNotFoundError, StoreUnavailableError } from './errors.js';
import type { AccountStore, PaidInvoice, PaidInvoiceOutcome } from './store.js';
import type { Account, Invoice } from './types.js';

/**
 * AccountStore on one Redis or on a Redis Cluster. Everything one account owns carries the hash tag
 * `{acct:<id>}`, so it lives in one cluster slot and every script and MULTI touches that slot only:
 *   {acct:<id>}                    hash   id, email?, plan, plan_expires_at?, created_at, key_hash
 *   {acct:<id>}:day:<YYYY-MM-DD>   string request counter of that UTC day, expires 2 days after its first use
 *   {acct:<id>}:invoices           zset   its payment ids scored by created_at
 *   {acct:<id>}:invoice:<pid>      hash   one invoice record
 *   {acct:<id>}:applied            set    payment ids whose purchase has been applied to it
 *   {acct:<id>}:heavy              zset   leases of its heavy requests running now (any process) scored by expiry ms
 * Lookups by something other than the account id go through an index in the looked-up value's own slot:
 *   apikey:<sha256>                string account id (the plaintext key is never stored)
 *   payment:<pid>                  string account id of the invoice with that provider payment id
 *   reg:<ip>:<YYYY-MM-DDTHH>       string registrations from that IP in that hour
 *   accounts:count                 string accounts created
 * (A key prefix goes before the tag and must hold no `{`, or it would become every key's tag.)
 *
 * No change spans two slots atomically, so an index is only ever a hint: it is written before the
 * account's own keys name it and removed after they stop naming it, and a lookup checks the account.
 * A key hash resolves only while the account's `key_hash` equals it; an invoice only when its record
 * exists under the account the index names. Every step below may fail (error, timeout, the node
 * gone, the process killed), and what is left behind then:
 * - register: SET apikey → HSET the account (the commit) → INCR the count. A failure before the commit
 *   leaves an index entry naming no account (it resolves to nothing); one at the count leaves an
 *   account nobody can use (the caller answers 503, so its key is never shown) and that is not counted.
 * - regenerate: SET apikey:<new> → one script on the account swaps `key_hash` only while it is the
 *   expected one (the commit) → DEL apikey:<old>. Before the commit the old key works and the new one
 *   resolves to nothing; at the commit the old key stops resolving whatever its index says, so a
 *   failed DEL only leaves garbage and never fails the request (the new key must reach its owner).
 *   The swap answers yes again when `key_hash` already is the new hash: a command resent after a
 *   lost reply finds its own swap done rather than reporting a lost race and deleting the new index.
 *   A lost race deletes only its own unused apikey:<new>.
 * - subscribe: SET payment → one MULTI writes the record and lists it (the commit). Before it the
 *   index names a record that does not exist: no invoice is found or listed, the caller gets a 503.
 * - IPN: a paid invoice is applied by one script on the account's slot that checks and adds its
 *   payment id to `:applied` together with the plan change, so no failure or retry applies it twice.
 * What no layout removes: a command whose reply is lost (a timeout, a connection cut after it ran)
 * may have happened though the caller answers 503. ioredis resends a command cut off by a dropped
 * connection, which the idempotent swap and application above absorb; a regeneration whose reply
 * never arrives at all can still leave the old key dead and the new one unshown. (A cluster
 * failover can also lose the last acknowledged writes: Redis replicates asynchronously.)
 */
const DAY_SECONDS = 86_400;

const CONSUME_DAILY = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return {0, n} end
n = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {1, n}`;

/** One request of the day given back, never below 0. */
const REFUND_DAILY = `
if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
return 1`;

/**
 * Heavy-request leases (a zset scored by expiry, in ms of the Redis server's clock, the one clock
 * every replica shares): expired ones go first, then ARGV[1] is added only below the limit ARGV[2],
 * to last ARGV[3] ms. The set itself expires with its last lease (its TTL only ever grows: a short
 * lease must not take the others with it).
 */
const TAKE_SLOT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1`;

/** Leases ARGV[2..] that still exist last ARGV[1] ms from now. */
const RENEW_SLOTS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i]) end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1`;

/** HSET the pairs and HDEL the names after them, only if the hash exists; returns the hash or nil. */
const PATCH_IF_EXISTS = `
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
local n = tonumber(ARGV[1])
if n > 0 then redis.call('HSET', KEYS[1], unpack(ARGV, 2, 1 + n * 2)) end
for i = 2 + n * 2, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
return redis.call('HGETALL', KEYS[1])`;

/**
 * Compare-and-swap of the key hash: KEYS = account hash; ARGV = expected hash, new hash. 1 when the
 * account's key is (now) the new one, 0 when it is neither.
 */
const SWAP_KEY_HASH = `
local current = redis.call('HGET', KEYS[1], 'key_hash')
if current == ARGV[2] then return 1 end
if current ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'key_hash', ARGV[2])
return 1`;

/**
 * A paid invoice's purchase, once: KEYS = account hash, invoice record, applied set; ARGV = payment
 * id, the plan and expiry the caller read ('' = none), the new plan and expiry, paid_at. 'changed'
 * when the account moved since it was read (the caller recomputes and retries).
 */
const APPLY_PAID_INVOICE = `
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then return 'already_applied' end
local plan = redis.call('HGET', KEYS[1], 'plan')
if not plan then return 'no_account' end
if plan ~= ARGV[2] or (redis.call('HGET', KEYS[1], 'plan_expires_at') or '') ~= ARGV[3] then return 'changed' end
redis.call('HSET', KEYS[1], 'plan', ARGV[4], 'plan_expires_at', ARGV[5])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HSET', KEYS[2], 'paid_at', ARGV[6]) end
redis.call('SADD', KEYS[3], ARGV[1])
return 'applied'`;

type Scripted = (Redis | Cluster) & {
  consumeDaily(key: string, limit: number, ttl: number): Promise<[number, number]>;
  refundDaily(key: string): Promise<number>;
  takeSlot(key: string, lease: string, limit: number, ttlMs: number): Promise<number>;
  renewSlots(key: string, ttlMs: number, ...leases: string[]): Promise<number>;
  patchIfExists(key: string, ...args: (string | number)[]): Promise<string[] | null>;
  swapKeyHash(account: string, expectedHash: string, newHash: string): Promise<number>;
  applyPaidInvoice(
    account: string,
    invoice: string,
    applied: string,
    ...args: (string | number)[]
  ): Promise<'applied' | 'already_applied' | 'no_account' | 'changed'>;
};

export interface RedisStoreOptions {
  /** Prepended to every key (tests isolate themselves with it). */
  keyPrefix?: string;
  /** `url` names seed nodes of a Redis Cluster (one or more URLs, comma-separated). */
  cluster?: boolean;
}

const TIMEOUT_MS = 2_000;
/** Reconnection delay after the `attempt`-th failure: soon, and never more than a second apart. */
const retryDelay = (attempt: number) => Math.min(attempt * 100, 1_000);

export async function openRedisStore(url: string, options: RedisStoreOptions = {}): Promise<AccountStore> {
  const redis = (options.cluster ? clusterClient(url, options.keyPrefix) : singleClient(url, options.keyPrefix)) as Scripted;
  redis.defineCommand('consumeDaily', { numberOfKeys: 1, lua: CONSUME_DAILY });
  redis.defineCommand('refundDaily', { numberOfKeys: 1, lua: REFUND_DAILY });
  redis.defineCommand('takeSlot', { numberOfKeys: 1, lua: TAKE_SLOT });
  redis.defineCommand('renewSlots', { numberOfKeys: 1, lua: RENEW_SLOTS });
  redis.defineCommand('patchIfExists', { numberOfKeys: 1, lua: PATCH_IF_EXISTS });
  redis.defineCommand('swapKeyHash', { numberOfKeys: 1, lua: SWAP_KEY_HASH });
  redis.defineCommand('applyPaidInvoice', { numberOfKeys: 3, lua: APPLY_PAID_INVOICE });

  let lastErrorLog = 0;
  const logError = (err: Error) => {
    if (Date.now() - lastErrorLog < 10_000) return;
    lastErrorLog = Date.now();
    log.warn('redis error', { error: errorText(err) });
  };
  redis.on('error', logError);
  redis.on('node error', logError);
  try {
    await firstConnection(redis);
  } catch (err) {
    log.warn('redis unreachable at start; serving 503 on authenticated routes until it is back', { error: errorText(err) });
  }
  return new RedisAccountStore(redis);
}

function singleClient(url: string, keyPrefix: string | undefined) {
  return new Redis(url, {
    keyPrefix,
    // Commands issued in the same tick (concurrent requests' counters) share one write and one read.
    enableAutoPipelining: true,
    lazyConnect: true,
    // Fail fast while Redis is down (the request gets a 503) instead of queueing commands forever...
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: TIMEOUT_MS,
    commandTimeout: TIMEOUT_MS,
    // ...and keep reconnecting in the background so the service recovers by itself.
    retryStrategy: retryDelay,
  });
}

/**
 * The same intent on a cluster: commands go to the node of their slot, fail at once while the
 * cluster is unreachable, and the client rediscovers the nodes from the seeds in the background.
 * The credentials and TLS of the first seed URL apply to every node found.
 */
function clusterClient(urls: string, keyPrefix: string | undefined) {
  const seeds = urls.split(',').map((u) => new URL(u.trim()));
  const first = seeds[0];
  return new Cluster(
    seeds.map((u) => ({ host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 6379) })),
    {
      keyPrefix,
      enableAutoPipelining: true,
      lazyConnect: true,
      enableOfflineQueue: false,
      clusterRetryStrategy: retryDelay,
      slotsRefreshTimeout: TIMEOUT_MS,
      redisOptions: {
        username: decodeURIComponent(first.username) || undefined,
        password: decodeURIComponent(first.password) || undefined,
        tls: first.protocol === 'rediss:' ? {} : undefined,
        maxRetriesPerRequest: 1,
        connectTimeout: TIMEOUT_MS,
        commandTimeout: TIMEOUT_MS,
      },
    },
  );
}

/**
 * Waits until the client is ready or has given up for now (it keeps retrying in the background).
 * A cluster's connect() never settles when its first ready check finds the cluster not yet `ok`
 * (ioredis 6), while the reconnection that follows does get ready: hence the race with 'ready', and
 * a bound for a cluster that stays down.
 */
async function firstConnection(redis: Redis | Cluster) {
  let bound: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.connect(),
      new Promise<void>((resolve) => redis.once('ready', () => resolve())),
      new Promise<void>((_, reject) => {
        bound = setTimeout(() => reject(new Error(`not ready within ${2 * TIMEOUT_MS} ms`)), 2 * TIMEOUT_MS);
      }),
    ]);
  } finally {
    clearTimeout(bound);
  }
}

const acctKey = (id: string) => `{acct:${id}}`;
const dayKey = (id: string, day: string) => `{acct:${id}}:day:${day}`;
const heavyKey = (id: string) => `{acct:${id}}:heavy`;
const invoicesKey = (id: string) => `{acct:${id}}:invoices`;
const invoiceKey = (id: string, paymentId: string) => `{acct:${id}}:invoice:${paymentId}`;
const appliedKey = (id: string) => `{acct:${id}}:applied`;
const apiKeyKey = (hash: string) => `apikey:${hash}`;
const paymentKey = (paymentId: string) => `payment:${paymentId}`;

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

  /** Removal of an index entry nothing resolves through any more: a failure leaves garbage, never an error. */
  private async removeIndex(key: string) {
    try {
      await this.redis.del(key);
    } catch (err) {
      log.warn('stale index entry left in redis', { key, error: errorText(err) });
    }
  }

  async ping() {
    return this.redis.ping().then(
      (r) => r === 'PONG',
      () => false,
    );
  }

  async close() {
    this.redis.disconnect();
  }

  async createAccount(input: { email: string | null; keyHash: string; plan: PlanName; plan_expires_at: number | null; now: number }) {
    const account: Account = { id: randomUUID(), email: input.email, plan: input.plan, plan_expires_at: input.plan_expires_at, created_at: input.now };
    await this.call(() => this.redis.set(apiKeyKey(input.keyHash), account.id));
    await this.call(() => this.redis.hset(acctKey(account.id), { ...accountFields(account), key_hash: input.keyHash }));
    await this.call(() => this.redis.incr('accounts:count'));
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
    await this.call(() => this.redis.set(apiKeyKey(newKeyHash), accountId));
    const swapped = (await this.call(() => this.redis.swapKeyHash(acctKey(accountId), expectedKeyHash, newKeyHash))) === 1;
    await this.removeIndex(apiKeyKey(swapped ? expectedKeyHash : newKeyHash));
    return swapped;
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

  async refundDaily(accountId: string, day: string) {
    await this.call(() => this.redis.refundDaily(dayKey(accountId, day)));
  }

  async takeSlot(accountId: string, lease: string, limit: number, ttlMs: number) {
    return (await this.call(() => this.redis.takeSlot(heavyKey(accountId), lease, limit, ttlMs))) === 1;
  }

  async renewSlots(accountId: string, leases: string[], ttlMs: number) {
    if (leases.length) await this.call(() => this.redis.renewSlots(heavyKey(accountId), ttlMs, ...leases));
  }

  async releaseSlot(accountId: string, lease: string) {
    await this.call(() => this.redis.zrem(heavyKey(accountId), lease));
  }

  async incrementRegistrations(ip: string, hour: string) {
    const key = `reg:${ip}:${hour}`;
    const result = await this.call(() =>
      this.redis
        .multi()
        .incr(key)
        .expire(key, 2 * 3600)
        .exec(),
    );
    return Number(result![0][1]);
  }

  async createInvoice(invoice: Invoice) {
    await this.call(() => this.redis.set(paymentKey(invoice.payment_id), invoice.account_id));
    await this.call(() =>
      this.redis
        .multi()
        .hset(invoiceKey(invoice.account_id, invoice.payment_id), invoiceFields(invoice))
        .zadd(invoicesKey(invoice.account_id), invoice.created_at, invoice.payment_id)
        .exec(),
    );
  }

  /** The key of the invoice record the payment index names (it may not exist), or null. */
  private async recordOf(paymentId: string) {
    const accountId = await this.call(() => this.redis.get(paymentKey(paymentId)));
    return accountId ? invoiceKey(accountId, paymentId) : null;
  }

  async getInvoice(paymentId: string) {
    const key = await this.recordOf(paymentId);
    if (!key) return null;
    const fields = await this.call(() => this.redis.hgetall(key));
    return fields.payment_id ? parseInvoice(fields) : null;
  }

  async updateInvoice(paymentId: string, patch: Partial<Pick<Invoice, 'status' | 'updated_at' | 'paid_at'>>) {
    const key = await this.recordOf(paymentId);
    if (!key) return null;
    const sets: (string | number)[] = [];
    const dels: string[] = [];
    for (const [name, value] of Object.entries(patch)) {
      if (value === undefined) continue;
      if (value === null) dels.push(name);
      else sets.push(name, value);
    }
    const flat = await this.call(() => this.redis.patchIfExists(key, sets.length / 2, ...sets, ...dels));
    return flat ? parseInvoice(pairsToObject(flat)) : null;
  }

  async listInvoices(accountId: string, limit: number) {
    const ids = await this.call(() => this.redis.zrevrange(invoicesKey(accountId), 0, limit - 1));
    if (!ids.length) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(invoiceKey(accountId, id));
    const results = await this.call(() => pipeline.exec());
    return results!
      .map(([, fields]) => fields as Record<string, string>)
      .filter((f) => f.payment_id)
      .map(parseInvoice);
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
          invoiceKey(invoice.account_id, invoice.payment_id),
          appliedKey(invoice.account_id),
          invoice.payment_id,
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
