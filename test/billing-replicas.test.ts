import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openRedisStore } from '../src/accounts/redis-store.js';
import type { AccountStore } from '../src/accounts/store.js';
import type { Invoice } from '../src/accounts/types.js';
import { signIpn } from '../src/billing/signature.js';
import { REDIS_CLUSTER_SKIP, REDIS_SKIP, titled } from './support/account-stores.js';
import { ipnBody } from './support/billing-app.js';
import { freePort } from './support/global-setup.js';
import { type ServiceProcess, startService } from './support/service-process.js';

/**
 * Two API replicas (two `npm start` processes) on one Redis, and on a Redis Cluster (REDIS_URL
 * listing its nodes, REDIS_CLUSTER=1), the processor's IPNs spread over both: one invoice upgrades
 * once, and every one of several invoices paid at once extends the plan.
 */
const SECRET = 'replica-ipn-secret';
const DAY = 86_400_000;
const BACKENDS = [
  { name: 'one Redis', url: inject('redisUrl'), cluster: false, skip: REDIS_SKIP },
  { name: 'a Redis Cluster', url: inject('redisClusterUrl'), cluster: true, skip: REDIS_CLUSTER_SKIP },
];

async function newInvoice(store: AccountStore, accountId: string, n: number): Promise<Invoice> {
  const at = Date.now();
  const invoice: Invoice = {
    payment_id: String(7_000_000_000 + randomInt(1_000_000_000)),
    account_id: accountId,
    plan: 'monthly',
    amount_usd: 59.9,
    order_id: `th-replica-${n}-${randomInt(1_000_000)}`,
    status: 'waiting',
    created_at: at,
    updated_at: at,
    paid_at: null,
  };
  await store.createInvoice(invoice);
  return invoice;
}

/** One signed `finished` IPN to replica `i`; returns whether that delivery upgraded. */
async function deliver(replicas: string[], i: number, invoice: Invoice): Promise<boolean> {
  const body = ipnBody(invoice, 'finished');
  const res = await fetch(`${replicas[i % 2]}/v1/billing/ipn`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'x-nowpayments-sig': signIpn(body, SECRET) },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { upgraded: boolean } }).data.upgraded;
}

for (const backend of BACKENDS)
  describe.skipIf(backend.skip !== null)(titled(`IPNs across two replicas on ${backend.name}`, backend.skip), () => {
    const dirs: string[] = [];
    const services: ServiceProcess[] = [];
    const replicas: string[] = [];
    let store: AccountStore;
    beforeAll(async () => {
      for (let i = 0; i < 2; i++) {
        const dir = mkdtempSync(join(tmpdir(), `tickhouse-replica-${i}-`));
        dirs.push(dir);
        const port = await freePort();
        services.push(
          startService({
            DATA_DIR: dir,
            PORT: String(port),
            REDIS_URL: backend.url,
            REDIS_CLUSTER: backend.cluster ? '1' : '0',
            PAYMENTS: 'sandbox',
            NOWPAYMENTS_IPN_SECRET: SECRET,
          }),
        );
        replicas.push(`http://127.0.0.1:${port}`);
      }
      await Promise.all(services.map((s) => s.serving()));
      store = await openRedisStore(backend.url, { cluster: backend.cluster });
    }, 90_000);
    afterAll(async () => {
      for (const s of services) s.child.kill('SIGKILL');
      await Promise.all(services.map((s) => s.exited));
      await store?.close();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    });

    it('the same invoice, delivered 20 times over both at once, upgrades exactly once', { timeout: 30_000 }, async () => {
      const account = await store.createAccount({ email: null, keyHash: `h-${randomInt(1e9)}`, plan: 'free', plan_expires_at: null, now: Date.now() });
      const invoice = await newInvoice(store, account.id, 0);
      const before = Date.now();
      const upgraded = await Promise.all(Array.from({ length: 20 }, (_, i) => deliver(replicas, i, invoice)));
      const after = Date.now();
      expect(upgraded.filter(Boolean)).toHaveLength(1);
      const now = (await store.getAccount(account.id))!;
      expect(now.plan).toBe('monthly');
      // 30 days from the moment it was applied, rounded up to a whole second: once, not twice.
      expect(now.plan_expires_at).toBeGreaterThanOrEqual(before + 30 * DAY);
      expect(now.plan_expires_at).toBeLessThanOrEqual(after + 30 * DAY + 1000);
      expect((await store.getInvoice(invoice.payment_id))!.paid_at).toBeGreaterThanOrEqual(before);
    });

    it('ten renewals paid at once over both replicas all extend the plan: 10 × 30 days', { timeout: 30_000 }, async () => {
      const expires = Math.ceil((Date.now() + 5 * DAY) / 1000) * 1000;
      const account = await store.createAccount({ email: null, keyHash: `h-${randomInt(1e9)}`, plan: 'monthly', plan_expires_at: expires, now: Date.now() });
      const invoices = await Promise.all(Array.from({ length: 10 }, (_, n) => newInvoice(store, account.id, n + 1)));
      const upgraded = await Promise.all(invoices.map((invoice, i) => deliver(replicas, i, invoice)));
      expect(upgraded).toEqual(Array(10).fill(true));
      expect(await store.getAccount(account.id)).toMatchObject({ plan: 'monthly', plan_expires_at: expires + 10 * 30 * DAY });
    });
  });
