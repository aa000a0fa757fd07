import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAccountStore } from '../../src/accounts/index.js';
import type { AccountStore } from '../../src/accounts/store.js';
import { createApp } from '../../src/app.js';
import { generateApiKey, hashApiKey } from '../../src/auth/keys.js';
import type { Engine } from '../../src/clickhouse/engine.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { AppDeps } from '../../src/deps.js';
import type { PlanName } from '../../src/plans.js';
import { createTestEngine, type TestEngine } from './engine.js';

/** The whole app on a fresh engine and a real (embedded) account store, with keys per plan. */
export interface DataApp {
  app: ReturnType<typeof createApp>;
  deps: AppDeps;
  te: TestEngine;
  clock: ManualClock;
  accounts: AccountStore;
  /** Bearer key of an active `unlimited` account. */
  key: string;
  keyFor(plan: PlanName): Promise<string>;
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

/** `engine` lets a test watch the app's engine calls (a wrapper that delegates to the real engine). */
export async function startDataApp(now: number, options: { engine?: (engine: Engine) => Engine } = {}): Promise<DataApp> {
  const te = await createTestEngine();
  const accountsDir = mkdtempSync(join(tmpdir(), 'tickhouse-accounts-'));
  const config = loadConfig({ DATA_DIR: accountsDir, LOG_LEVEL: 'silent', DEMO_DATA: '0' });
  const accounts = await openAccountStore(config);
  const clock = new ManualClock(now);
  const deps: AppDeps = { config, engine: options.engine?.(te.engine) ?? te.engine, accounts, clock };
  const app = createApp(deps);
  const keyFor = async (plan: PlanName) => {
    const key = generateApiKey(config.API_KEY_PREFIX);
    await accounts.createAccount({ email: null, keyHash: hashApiKey(key), plan, plan_expires_at: plan === 'free' ? null : now + 30 * 86_400_000, now });
    return key;
  };
  const key = await keyFor('unlimited');
  return {
    app,
    deps,
    te,
    clock,
    accounts,
    key,
    keyFor,
    get: (path, headers = {}) => Promise.resolve(app.request(path, { headers: { authorization: `Bearer ${key}`, ...headers } })),
    async close() {
      await app.books.close();
      await accounts.close();
      await te.close();
      rmSync(accountsDir, { recursive: true, force: true });
    },
  };
}
