import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AccountStoreLockedError, openEmbeddedStore } from '../src/accounts/embedded-store.js';
import { AccountNotFoundError } from '../src/accounts/errors.js';
import type { AccountStore } from '../src/accounts/store.js';
import type { Invoice } from '../src/accounts/types.js';
import { hashApiKey } from '../src/auth/keys.js';
import { describeEachStore, openEmbeddedTestStore, type TestStore } from './support/account-stores.js';
import { waitFor } from './support/wait.js';

const T0 = Date.UTC(2026, 5, 24, 12, 0, 0);

function invoice(accountId: string, paymentId: string, createdAt: number): Invoice {
  return {
    payment_id: paymentId,
    account_id: accountId,
    plan: 'monthly',
    amount_usd: 59.9,
    order_id: paymentId,
    status: 'waiting',
    created_at: createdAt,
    updated_at: createdAt,
    paid_at: null,
  };
}

describeEachStore('AccountStore contract: %s', ({ open }) => {
  let t: TestStore;
  let store: AccountStore;
  beforeEach(async () => {
    t = await open();
    store = t.store;
  });
  afterEach(async () => {
    await t.close();
  });

  const create = (over: Partial<Parameters<AccountStore['createAccount']>[0]> = {}) =>
    store.createAccount({ email: null, keyHash: hashApiKey(`k-${Math.random()}`), plan: 'free', plan_expires_at: null, now: T0, ...over });

  it('creates accounts and finds them by id and by key hash', async () => {
    const keyHash = hashApiKey('th_live_one');
    const a = await create({ email: 'a@example.com', keyHash, plan: 'monthly', plan_expires_at: T0 + 1000 });
    expect(a).toEqual({ id: a.id, email: 'a@example.com', plan: 'monthly', plan_expires_at: T0 + 1000, created_at: T0 });
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await store.getAccount(a.id)).toEqual(a);
    expect(await store.findByKeyHash(keyHash)).toEqual(a);
    expect(await store.findByKeyHash(hashApiKey('th_live_other'))).toBeNull();
    expect(await store.getAccount('00000000-0000-4000-8000-000000000000')).toBeNull();
    const b = await create();
    expect(b.email).toBeNull();
    expect(b.plan_expires_at).toBeNull();
    expect(await store.countAccounts()).toBe(2);
  });

  it('replaces a key: the old hash stops resolving, everything else stays', async () => {
    const oldHash = hashApiKey('old');
    const a = await create({ keyHash: oldHash, plan: 'daily', plan_expires_at: T0 + 5 });
    expect(await store.findByKeyHash(oldHash)).toEqual(a);
    await store.consumeDaily(a.id, '2026-06-24', 100);
    const newHash = hashApiKey('new');
    expect(await store.replaceKey(a.id, newHash, hashApiKey('wrong'))).toBe(false);
    expect(await store.replaceKey(a.id, oldHash, newHash)).toBe(true);
    expect(await store.findByKeyHash(oldHash)).toBeNull();
    expect(await store.findByKeyHash(newHash)).toEqual(a);
    expect(await store.getDaily(a.id, '2026-06-24')).toBe(1);
    // The old key can no longer be swapped: compare-and-swap on the key hash.
    expect(await store.replaceKey(a.id, oldHash, hashApiKey('newer'))).toBe(false);
    expect(await store.findByKeyHash(newHash)).toEqual(a);
    expect(await store.replaceKey('00000000-0000-4000-8000-000000000000', oldHash, hashApiKey('x'))).toBe(false);
  });

  it('a key replacement sent again (its reply was lost) succeeds again and changes nothing', async () => {
    const oldHash = hashApiKey(`resent-${Math.random()}`);
    const newHash = hashApiKey(`resent-new-${Math.random()}`);
    const a = await create({ keyHash: oldHash });
    expect(await store.replaceKey(a.id, oldHash, newHash)).toBe(true);
    expect(await store.replaceKey(a.id, oldHash, newHash)).toBe(true);
    expect(await store.findByKeyHash(newHash)).toEqual(a);
    expect(await store.findByKeyHash(oldHash)).toBeNull();
  });

  it('of 20 concurrent key replacements from one key exactly one wins', async () => {
    const oldHash = hashApiKey(`race-${Math.random()}`);
    const a = await create({ keyHash: oldHash });
    const hashes = Array.from({ length: 20 }, (_, i) => hashApiKey(`race-new-${i}-${Math.random()}`));
    const results = await Promise.all(hashes.map((h) => store.replaceKey(a.id, oldHash, h)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = hashes[results.indexOf(true)];
    for (const h of hashes) expect(await store.findByKeyHash(h)).toEqual(h === winner ? a : null);
    expect(await store.findByKeyHash(oldHash)).toBeNull();
  });

  it('sets a plan and its expiry (null clears it)', async () => {
    const keyHash = hashApiKey('k');
    const a = await create({ keyHash });
    expect(await store.findByKeyHash(keyHash)).toEqual(a);
    const paid = await store.setPlan(a.id, 'unlimited', T0 + 86_400_000);
    expect(paid).toEqual({ ...a, plan: 'unlimited', plan_expires_at: T0 + 86_400_000 });
    expect(await store.findByKeyHash(keyHash)).toEqual(paid);
    const back = await store.setPlan(a.id, 'free', null);
    expect(back).toEqual(a);
    expect(await store.getAccount(a.id)).toEqual(a);
    await expect(store.setPlan('00000000-0000-4000-8000-000000000000', 'daily', 1)).rejects.toBeInstanceOf(AccountNotFoundError);
  });

  it('counts per account per day', async () => {
    const a = await create();
    const b = await create();
    expect(await store.consumeDaily(a.id, '2026-06-24', 100)).toEqual({ allowed: true, count: 1 });
    expect(await store.consumeDaily(a.id, '2026-06-24', 100)).toEqual({ allowed: true, count: 2 });
    expect(await store.consumeDaily(a.id, '2026-06-25', 100)).toEqual({ allowed: true, count: 1 });
    expect(await store.consumeDaily(b.id, '2026-06-24', 100)).toEqual({ allowed: true, count: 1 });
    expect(await store.getDaily(a.id, '2026-06-24')).toBe(2);
    expect(await store.getDaily(a.id, '2026-06-23')).toBe(0);
  });

  it('consumeDaily counts up to the limit and never past it, also under concurrency', async () => {
    const a = await create();
    expect(await store.consumeDaily(a.id, '2026-06-24', 2)).toEqual({ allowed: true, count: 1 });
    expect(await store.consumeDaily(a.id, '2026-06-24', 2)).toEqual({ allowed: true, count: 2 });
    expect(await store.consumeDaily(a.id, '2026-06-24', 2)).toEqual({ allowed: false, count: 2 });
    expect(await store.getDaily(a.id, '2026-06-24')).toBe(2);

    const results = await Promise.all(Array.from({ length: 50 }, () => store.consumeDaily(a.id, '2026-06-25', 20)));
    expect(results.filter((r) => r.allowed)).toHaveLength(20);
    expect(
      results
        .filter((r) => r.allowed)
        .map((r) => r.count)
        .sort((x, y) => x - y),
    ).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(await store.getDaily(a.id, '2026-06-25')).toBe(20);
  });

  it('refundDaily gives back one request of the day, never below 0 (issue 35: a failed export is not counted)', async () => {
    const a = await create();
    await store.consumeDaily(a.id, '2026-06-24', 100);
    await store.consumeDaily(a.id, '2026-06-24', 100);
    await store.refundDaily(a.id, '2026-06-24');
    expect(await store.getDaily(a.id, '2026-06-24')).toBe(1);
    await store.refundDaily(a.id, '2026-06-24');
    await store.refundDaily(a.id, '2026-06-24');
    await store.refundDaily(a.id, '2026-06-23');
    expect([await store.getDaily(a.id, '2026-06-24'), await store.getDaily(a.id, '2026-06-23')]).toEqual([0, 0]);
  });

  it('heavy-request slots: at most `limit` per account under concurrency; released, renewed and expired leases (issue 35)', async () => {
    const a = await create();
    const b = await create();
    const taken = await Promise.all(Array.from({ length: 20 }, (_, i) => store.takeSlot(a.id, `lease-${i}`, 3, 60_000)));
    expect(taken.filter(Boolean)).toHaveLength(3);
    // Another account's slots are its own.
    expect(await store.takeSlot(b.id, 'b-1', 1, 60_000)).toBe(true);
    expect(await store.takeSlot(b.id, 'b-2', 1, 60_000)).toBe(false);
    // A released lease frees its slot; renewing one that is gone does not bring it back.
    const held = taken.flatMap((ok, i) => (ok ? [`lease-${i}`] : []));
    await store.releaseSlot(a.id, held[0]);
    await store.renewSlots(a.id, held, 60_000);
    expect(await store.takeSlot(a.id, 'lease-new', 3, 60_000)).toBe(true);
    expect(await store.takeSlot(a.id, 'lease-over', 3, 60_000)).toBe(false);
    // A lease nobody renews expires on its own (a process that died holding it).
    expect(await store.takeSlot(b.id, 'b-3', 2, 1)).toBe(true);
    await waitFor(async () => store.takeSlot(b.id, `b-${Math.random()}`, 2, 60_000), 'the 1 ms lease to expire');
    expect(await store.takeSlot(b.id, 'b-4', 2, 60_000)).toBe(false);
  });

  it('counts registrations per IP per hour', async () => {
    expect(await store.incrementRegistrations('10.0.0.1', '2026-06-24T12')).toBe(1);
    expect(await store.incrementRegistrations('10.0.0.1', '2026-06-24T12')).toBe(2);
    expect(await store.incrementRegistrations('10.0.0.2', '2026-06-24T12')).toBe(1);
    expect(await store.incrementRegistrations('10.0.0.1', '2026-06-24T13')).toBe(1);
  });

  it('stores, updates and lists invoices newest first', async () => {
    const a = await create();
    const b = await create();
    const pid = (n: number) => `${t.location.length}-${a.id.slice(0, 8)}-${n}`;
    for (let n = 0; n < 12; n++) await store.createInvoice(invoice(a.id, pid(n), T0 + n * 1000));
    await store.createInvoice(invoice(b.id, `${b.id}-x`, T0));
    expect(await store.getInvoice(pid(3))).toEqual(invoice(a.id, pid(3), T0 + 3000));
    expect(await store.getInvoice('nope')).toBeNull();

    const listed = await store.listInvoices(a.id, 10);
    expect(listed.map((i) => i.payment_id)).toEqual([11, 10, 9, 8, 7, 6, 5, 4, 3, 2].map(pid));
    expect((await store.listInvoices(b.id, 10)).map((i) => i.payment_id)).toEqual([`${b.id}-x`]);
    expect(await store.listInvoices((await create()).id, 10)).toEqual([]);

    const paid = await store.updateInvoice(pid(11), { status: 'finished', updated_at: T0 + 99, paid_at: T0 + 98 });
    expect(paid).toEqual({ ...invoice(a.id, pid(11), T0 + 11_000), status: 'finished', updated_at: T0 + 99, paid_at: T0 + 98 });
    expect(await store.getInvoice(pid(11))).toEqual(paid);
    expect(await store.updateInvoice(pid(11), { status: 'refunded' })).toEqual({ ...paid, status: 'refunded' });
    expect(await store.updateInvoice('nope', { status: 'finished' })).toBeNull();
    expect(await store.getInvoice('nope')).toBeNull();
  });

  it('applies a paid invoice exactly once, also under concurrency; each of several invoices extends the last', async () => {
    const a = await create();
    const paid = (paymentId: string, at: number) =>
      store.applyPaidInvoice(
        { payment_id: paymentId, account_id: a.id, plan: 'monthly' },
        at,
        (acc) => (acc.plan === 'monthly' ? acc.plan_expires_at! : at) + 1000,
      );
    await store.createInvoice(invoice(a.id, `${a.id}-claim`, T0));
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => paid(`${a.id}-claim`, T0 + 5)));
    const applied = { applied: true, account: { ...a, plan: 'monthly', plan_expires_at: T0 + 1005 } };
    expect(outcomes.filter((o) => o.applied)).toEqual([applied]);
    expect(outcomes.filter((o) => !o.applied)).toEqual(Array(9).fill({ applied: false, reason: 'already_applied' }));
    expect(await paid(`${a.id}-claim`, T0 + 6)).toEqual({ applied: false, reason: 'already_applied' });
    expect(await store.getAccount(a.id)).toEqual(applied.account);
    expect((await store.getInvoice(`${a.id}-claim`))!.paid_at).toBe(T0 + 5);
    // Ten different invoices at once: every one is applied, each on the result of the one before.
    const ten = await Promise.all(Array.from({ length: 10 }, (_, i) => paid(`${a.id}-renew-${i}`, T0 + 5)));
    expect(ten.every((o) => o.applied)).toBe(true);
    expect((await store.getAccount(a.id))!.plan_expires_at).toBe(T0 + 1005 + 10 * 1000);
    expect(await store.applyPaidInvoice({ payment_id: 'p-x', account_id: '00000000-0000-4000-8000-000000000000', plan: 'daily' }, T0, () => T0)).toEqual({
      applied: false,
      reason: 'no_account',
    });
  });

  it('keeps accounts, keys, counters and invoices across a restart', async () => {
    const keyHash = hashApiKey('persist');
    const a = await create({ keyHash, email: 'p@example.com', plan: 'daily', plan_expires_at: T0 + 1 });
    await store.consumeDaily(a.id, '2026-06-24', 100);
    await store.consumeDaily(a.id, '2026-06-24', 100);
    await store.incrementRegistrations('10.9.9.9', '2026-06-24T12');
    await store.createInvoice(invoice(a.id, `${a.id}-p`, T0));
    await store.applyPaidInvoice({ payment_id: `${a.id}-p`, account_id: a.id, plan: 'daily' }, T0 + 2, () => T0 + 1);
    store = await t.reopen();
    expect(await store.findByKeyHash(keyHash)).toEqual(a);
    expect(await store.getDaily(a.id, '2026-06-24')).toBe(2);
    expect(await store.incrementRegistrations('10.9.9.9', '2026-06-24T12')).toBe(2);
    expect(await store.getInvoice(`${a.id}-p`)).toEqual({ ...invoice(a.id, `${a.id}-p`, T0), paid_at: T0 + 2 });
    expect(await store.applyPaidInvoice({ payment_id: `${a.id}-p`, account_id: a.id, plan: 'daily' }, T0 + 3, () => T0 + 9)).toEqual({
      applied: false,
      reason: 'already_applied',
    });
  });
});

describe('embedded store on disk', () => {
  it('flushes counters on its own (a timer, COUNTER_FLUSH_MS), without a close, through a temp file + rename', async () => {
    const t = await openEmbeddedTestStore();
    try {
      const a = await t.store.createAccount({ email: null, keyHash: hashApiKey('x'), plan: 'free', plan_expires_at: null, now: T0 });
      await t.store.consumeDaily(a.id, '2026-06-24', 100);
      const file = join(t.location, 'accounts.json');
      expect(JSON.parse(readFileSync(file, 'utf8')).counters).toEqual({});
      // Watched until it lands; every read parses whole, as the file is only ever replaced by a rename.
      await waitFor(() => Object.keys(JSON.parse(readFileSync(file, 'utf8')).counters).length > 0, 'the counter on disk');
      expect(JSON.parse(readFileSync(file, 'utf8')).counters).toEqual({ [`${a.id}|2026-06-24`]: 1 });
      // The plaintext key never reaches the file.
      expect(readFileSync(file, 'utf8')).not.toContain('"x"');
    } finally {
      await t.close();
    }
  });

  it('refuses a data directory whose store another live process holds', async () => {
    const t = await openEmbeddedTestStore();
    await t.store.close();
    const other = spawn('sleep', ['30']);
    try {
      writeFileSync(join(t.location, 'accounts.lock'), String(other.pid));
      await expect(openEmbeddedStore(t.location)).rejects.toThrow(AccountStoreLockedError);
      await expect(openEmbeddedStore(t.location)).rejects.toThrow(/in use by another process \(pid \d+\).*REDIS_URL/);
    } finally {
      other.kill('SIGKILL');
    }
    // A lock left by a dead process is taken over.
    await new Promise((r) => other.once('exit', r));
    const reopened = await openEmbeddedStore(t.location);
    await reopened.close();
    await t.close();
  });
});
