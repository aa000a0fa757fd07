import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StoreUnavailableError } from '../src/accounts/errors.js';
import { openRedisStore } from '../src/accounts/redis-store.js';
import type { AccountStore } from '../src/accounts/store.js';
import type { Invoice } from '../src/accounts/types.js';
import { hashApiKey } from '../src/auth/keys.js';
import { log } from '../src/log.js';
import { openRawRedis, REDIS_VARIANTS, type TestStore, titled } from './support/account-stores.js';

/**
 * What the Redis store writes, on one Redis and on the local Redis Cluster: every key an account
 * owns in the slot of its tag, the indexes beside it only hints, and each state a failure can leave
 * between the steps of a change (the header of src/accounts/redis-store.ts) harmless. The states are
 * written into Redis as such a failure leaves them.
 */
const T0 = Date.UTC(2026, 5, 24, 12, 0, 0);
const freshHash = () => hashApiKey(`th_live_${randomUUID()}`);

function invoice(accountId: string, paymentId: string): Invoice {
  return {
    payment_id: paymentId,
    account_id: accountId,
    plan: 'monthly',
    amount_usd: 59.9,
    order_id: paymentId,
    status: 'waiting',
    created_at: T0,
    updated_at: T0,
    paid_at: null,
  };
}

for (const variant of REDIS_VARIANTS) {
  describe.skipIf(variant.skip !== null)(titled(`Redis layout on ${variant.kind}`, variant.skip), () => {
    let t: TestStore;
    let store: AccountStore;
    let raw: Awaited<ReturnType<typeof openRawRedis>>;
    /** The test store's key prefix: the raw client sees the keys with it. */
    let p: string;
    beforeEach(async () => {
      t = await variant.open();
      store = t.store;
      p = t.location;
      raw = await openRawRedis(variant.redisUrl!, variant.redisCluster);
    });
    afterEach(async () => {
      raw?.disconnect();
      await t?.close();
    });
    const create = (keyHash = freshHash()) => store.createAccount({ email: null, keyHash, plan: 'free', plan_expires_at: null, now: T0 });

    it('every key an account owns shares the slot of {acct:<id>}; the indexes outside it name the account', async () => {
      const [oldHash, newHash] = [freshHash(), freshHash()];
      const a = await create(oldHash);
      await store.consumeDaily(a.id, '2026-06-24', 10);
      await store.consumeDaily(a.id, '2026-06-25', 10);
      const [paid, open] = [randomUUID(), randomUUID()];
      await store.createInvoice(invoice(a.id, paid));
      await store.createInvoice(invoice(a.id, open));
      expect(await store.updateInvoice(paid, { status: 'finished', updated_at: T0 + 1 })).toMatchObject({ status: 'finished' });
      expect(await store.applyPaidInvoice({ payment_id: paid, account_id: a.id, plan: 'monthly' }, T0 + 1, () => T0 + 2)).toMatchObject({ applied: true });
      expect(await store.replaceKey(a.id, oldHash, newHash)).toBe(true);
      expect(await store.listInvoices(a.id, 10)).toHaveLength(2);

      const tag = `${p}{acct:${a.id}}`;
      const owned = [
        tag,
        `${tag}:applied`,
        `${tag}:day:2026-06-24`,
        `${tag}:day:2026-06-25`,
        `${tag}:invoice:${open}`,
        `${tag}:invoice:${paid}`,
        `${tag}:invoices`,
      ];
      const indexes = [`${p}apikey:${newHash}`, `${p}payment:${open}`, `${p}payment:${paid}`];
      expect((await raw.keys(`${p}*`)).sort()).toEqual([...owned, ...indexes, `${p}accounts:count`].sort());
      for (const index of indexes) expect(await raw.client.get(index)).toBe(a.id);
      if (variant.redisCluster) {
        const slot = await raw.client.cluster('KEYSLOT', `{acct:${a.id}}`);
        expect(await Promise.all(owned.map((k) => raw.client.cluster('KEYSLOT', k)))).toEqual(owned.map(() => slot));
      }
    });

    it('a registration cut short before its account was written: its key resolves to nothing', async () => {
      const keyHash = freshHash();
      await raw.client.set(`${p}apikey:${keyHash}`, randomUUID());
      expect(await store.findByKeyHash(keyHash)).toBeNull();
      expect(await store.countAccounts()).toBe(0);
    });

    it('a regeneration cut short before its swap: the new key resolves to nothing, the old one still does', async () => {
      const [oldHash, newHash] = [freshHash(), freshHash()];
      const a = await create(oldHash);
      await raw.client.set(`${p}apikey:${newHash}`, a.id);
      expect(await store.findByKeyHash(newHash)).toBeNull();
      expect(await store.findByKeyHash(oldHash)).toEqual(a);
    });

    it('a regeneration cut short after its swap: the old index entry left behind resolves to nothing', async () => {
      const [oldHash, newHash] = [freshHash(), freshHash()];
      const a = await create(oldHash);
      expect(await store.replaceKey(a.id, oldHash, newHash)).toBe(true);
      await raw.client.set(`${p}apikey:${oldHash}`, a.id);
      expect(await store.findByKeyHash(oldHash)).toBeNull();
      expect(await store.findByKeyHash(newHash)).toEqual(a);
    });

    it('of concurrent regenerations only the winner keeps an index entry', async () => {
      const oldHash = freshHash();
      const a = await create(oldHash);
      const hashes = Array.from({ length: 10 }, freshHash);
      const results = await Promise.all(hashes.map((h) => store.replaceKey(a.id, oldHash, h)));
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await raw.keys(`${p}apikey:*`)).toEqual([`${p}apikey:${hashes[results.indexOf(true)]}`]);
    });

    it('a subscription cut short before its record was written: no invoice is found, updated, listed or paid', async () => {
      const a = await create();
      const pid = randomUUID();
      await raw.client.set(`${p}payment:${pid}`, a.id);
      expect(await store.getInvoice(pid)).toBeNull();
      expect(await store.updateInvoice(pid, { status: 'finished', updated_at: T0 })).toBeNull();
      expect(await store.listInvoices(a.id, 10)).toEqual([]);
      expect(await raw.keys(`${p}{acct:${a.id}}:invoice*`)).toEqual([]);
    });

    it('a regeneration whose new index entry cannot be written fails and changes nothing', async () => {
      // A Redis user that may only read the key index: the first step of a regeneration fails.
      for (const server of raw.masters())
        await server.acl('SETUSER', 'tickhouse-noindex', 'on', '>noindex', 'resetkeys', '%R~*apikey:*', '~*{acct:*', '&*', '+@all');
      const url = variant.redisUrl!.replaceAll('redis://', 'redis://tickhouse-noindex:noindex@');
      const limited = await openRedisStore(url, { keyPrefix: p, cluster: variant.redisCluster });
      try {
        const [oldHash, newHash] = [freshHash(), freshHash()];
        const a = await create(oldHash);
        await expect(limited.replaceKey(a.id, oldHash, newHash)).rejects.toBeInstanceOf(StoreUnavailableError);
        expect(await limited.findByKeyHash(oldHash)).toEqual(a);
        expect(await store.findByKeyHash(newHash)).toBeNull();
        expect(await raw.client.hget(`${p}{acct:${a.id}}`, 'key_hash')).toBe(oldHash);
      } finally {
        await limited.close();
      }
    });

    it('a failed index cleanup does not fail the regeneration: the new key works, the old one is dead', async () => {
      // A Redis user that may do anything but delete: the swap succeeds, the removal of the old index fails.
      for (const server of raw.masters()) await server.acl('SETUSER', 'tickhouse-nodel', 'on', '>nodel', '~*', '&*', '+@all', '-del', '-unlink');
      const url = variant.redisUrl!.replaceAll('redis://', 'redis://tickhouse-nodel:nodel@');
      const limited = await openRedisStore(url, { keyPrefix: p, cluster: variant.redisCluster });
      const warn = vi.spyOn(log, 'warn').mockImplementation(() => {});
      try {
        const [oldHash, newHash] = [freshHash(), freshHash()];
        const a = await limited.createAccount({ email: null, keyHash: oldHash, plan: 'free', plan_expires_at: null, now: T0 });
        expect(await limited.replaceKey(a.id, oldHash, newHash)).toBe(true);
        expect(await raw.client.get(`${p}apikey:${oldHash}`)).toBe(a.id);
        expect(warn.mock.calls).toEqual([['stale index entry left in redis', { key: `apikey:${oldHash}`, error: expect.stringContaining('NOPERM') }]]);
        expect(await limited.findByKeyHash(oldHash)).toBeNull();
        expect(await limited.findByKeyHash(newHash)).toEqual(a);
      } finally {
        warn.mockRestore();
        await limited.close();
      }
    });
  });
}
