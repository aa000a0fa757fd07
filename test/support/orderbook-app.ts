import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAccountStore } from '../../src/accounts/index.js';
import type { AccountStore } from '../../src/accounts/store.js';
import { createApp } from '../../src/app.js';
import { generateApiKey, hashApiKey } from '../../src/auth/keys.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { PlanName } from '../../src/plans.js';
import { createTestEngine, type TestEngine } from './engine.js';

/** The whole app on a fresh engine and a real (embedded) account store, with keys per plan. */
export interface OrderbookApp {
  te: TestEngine;
  clock: ManualClock;
  /** Bearer key of an active `unlimited` account. */
  key: string;
  keyFor(plan: PlanName): Promise<string>;
  /** GET `path` with `key` (default: the unlimited one); the parsed JSON body and the status. */
  get(path: string, key?: string | null): Promise<{ status: number; body: any; res: Response }>;
  close(): Promise<void>;
}

export async function startOrderbookApp(now: number): Promise<OrderbookApp> {
  const te = await createTestEngine();
  const accountsDir = mkdtempSync(join(tmpdir(), 'tickhouse-orderbook-accounts-'));
  const config = loadConfig({ DATA_DIR: accountsDir, LOG_LEVEL: 'silent', DEMO_DATA: '0' });
  const accounts: AccountStore = await openAccountStore(config);
  const clock = new ManualClock(now);
  const app = createApp({ config, engine: te.engine, accounts, clock });
  const keyFor = async (plan: PlanName) => {
    const key = generateApiKey(config.API_KEY_PREFIX);
    await accounts.createAccount({ email: null, keyHash: hashApiKey(key), plan, plan_expires_at: plan === 'free' ? null : now + 30 * 86_400_000, now });
    return key;
  };
  const key = await keyFor('unlimited');
  return {
    te,
    clock,
    key,
    keyFor,
    async get(path, withKey = key) {
      const res = await app.request(path, { headers: withKey === null ? {} : { authorization: `Bearer ${withKey}` } });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null, res };
    },
    async close() {
      await accounts.close();
      await te.close();
      rmSync(accountsDir, { recursive: true, force: true });
    },
  };
}
