import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAccountStore } from '../../src/accounts/index.js';
import type { AccountStore } from '../../src/accounts/store.js';
import { createApp } from '../../src/app.js';
import { generateApiKey, hashApiKey } from '../../src/auth/keys.js';
import { createPaymentProvider } from '../../src/billing/index.js';
import type { PaymentProvider } from '../../src/billing/provider.js';
import { signIpn } from '../../src/billing/signature.js';
import type { Engine } from '../../src/clickhouse/engine.js';
import type { Clock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';

/** The whole app on a real account store (embedded under a temp dir, or Redis), as billing tests drive it. */
export interface BillingApp {
  app: ReturnType<typeof createApp>;
  accounts: AccountStore;
  /** null when the configuration turns payments off. */
  payments: PaymentProvider | null;
  /** A request with the key as Bearer and, for a body, Content-Type JSON. */
  call(key: string, method: string, path: string, body?: unknown): Promise<Response>;
  /** POST /v1/billing/ipn with `body` signed by the provider's secret (or `signature` as given). */
  ipn(body: unknown, signature?: string | null): Promise<Response>;
  /** An account made directly in the store (spares the per-IP registration limit). */
  newAccount(): Promise<{ id: string; key: string }>;
  close(): Promise<void>;
}

export async function startBillingApp(options: {
  engine: Engine;
  clock: Clock;
  redisUrl?: string;
  /** REDIS_CLUSTER: redisUrl names seed nodes of a Redis Cluster. */
  redisCluster?: boolean;
  env?: Record<string, string>;
  /** Default: the provider the configuration selects. */
  payments?: (config: ReturnType<typeof loadConfig>) => PaymentProvider;
}): Promise<BillingApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-billing-'));
  // Without a NOWPayments key, the sandbox by name: on Redis the default is no provider at all (config.ts).
  const sandbox = options.env?.NOWPAYMENTS_API_KEY ? {} : { PAYMENTS: 'sandbox' };
  const redis = { REDIS_URL: options.redisUrl, REDIS_CLUSTER: options.redisCluster ? '1' : undefined };
  const config = loadConfig({ DATA_DIR: dataDir, PUBLIC_URL: 'http://tickhouse.test', LOG_LEVEL: 'silent', ...redis, ...sandbox, ...options.env });
  const accounts = await openAccountStore(config);
  const payments = options.payments?.(config) ?? createPaymentProvider(config);
  const app = createApp({ config, engine: options.engine, accounts, clock: options.clock, payments });

  const call = async (key: string, method: string, path: string, body?: unknown) =>
    app.request(path, {
      method,
      headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  return {
    app,
    accounts,
    payments,
    call,
    ipn: async (body, signature) =>
      app.request('/v1/billing/ipn', {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          ...(signature === null ? {} : { 'x-nowpayments-sig': signature ?? signIpn(body, payments?.ipnSecret ?? '') }),
        },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    async newAccount() {
      const key = generateApiKey(config.API_KEY_PREFIX);
      const account = await accounts.createAccount({ email: null, keyHash: hashApiKey(key), plan: 'free', plan_expires_at: null, now: options.clock.now() });
      return { id: account.id, key };
    },
    async close() {
      await accounts.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The IPN NOWPayments sends for a payment of an invoice (shape of samples.jsonl line 1). */
export function ipnBody(invoice: { payment_id: string; order_id: string; amount_usd: number }, status: string, overrides: Record<string, unknown> = {}) {
  return {
    actually_paid: status === 'waiting' ? 0 : invoice.amount_usd,
    actually_paid_at_fiat: 0,
    fee: { currency: 'usdttrc20', depositFee: 0, serviceFee: 0, withdrawalFee: 0 },
    invoice_id: Number(invoice.payment_id),
    order_description: 'tickhouse plan',
    order_id: invoice.order_id,
    outcome_amount: invoice.amount_usd,
    outcome_currency: 'usdttrc20',
    parent_payment_id: null,
    pay_address: 'TXYZexampleaddress',
    pay_amount: invoice.amount_usd,
    pay_currency: 'usdttrc20',
    payin_extra_id: null,
    payment_extra_ids: null,
    payment_id: 4_492_847_470,
    payment_status: status,
    price_amount: invoice.amount_usd,
    price_currency: 'usd',
    purchase_id: '6105448077',
    updated_at: 1_774_390_831_880,
    ...overrides,
  };
}
