import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAccountStore } from '../../src/accounts/index.js';
import { withLookupCache } from '../../src/accounts/lookup-cache.js';
import { openRedisStore } from '../../src/accounts/redis-store.js';
import type { AccountStore } from '../../src/accounts/store.js';
import { createApp } from '../../src/app.js';
import { checkHistoryWindow } from '../../src/auth/history-window.js';
import { generateApiKey, hashApiKey } from '../../src/auth/keys.js';
import type { Engine } from '../../src/clickhouse/engine.js';
import type { Clock } from '../../src/clock.js';
import { type Config, loadConfig } from '../../src/config.js';
import { invalidParameter } from '../../src/http/errors.js';
import { setLogLevel } from '../../src/log.js';
import type { PlanName } from '../../src/plans.js';

/**
 * The real app (real middleware wiring of app.ts) on a real account store, plus test-only routes
 * under `/v1/orderbook/` — a counted data prefix no real route uses — so the auth, daily-limit and
 * history-window behaviour is tested exactly as the data routes get it:
 *   GET /v1/orderbook/__probe[?start=ms]  200 {earliest_allowed: ms}, or the 403 of the window
 *   GET /v1/orderbook/__fail              400 invalid_parameter (a counted failure)
 */
export interface AccountApp {
  app: ReturnType<typeof createApp>;
  accounts: AccountStore;
  config: Config;
  /** GET/POST with the key as Bearer (no header when key is null). */
  call(key: string | null, path: string, init?: RequestInit): Promise<Response>;
  newAccount(plan?: PlanName, planExpiresAt?: number | null): Promise<{ id: string; key: string }>;
  close(): Promise<void>;
}

export async function startAccountApp(options: {
  engine: Engine;
  clock: Clock;
  redisUrl?: string;
  redisCluster?: boolean;
  redisKeyPrefix?: string;
  env?: Record<string, string>;
}): Promise<AccountApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-accounts-app-'));
  const redis = { REDIS_URL: options.redisUrl, REDIS_CLUSTER: options.redisCluster ? '1' : undefined };
  const config = loadConfig({ DATA_DIR: dataDir, PUBLIC_URL: 'http://tickhouse.test', LOG_LEVEL: 'silent', ...redis, ...options.env });
  setLogLevel(config.LOG_LEVEL);
  // Redis: a key prefix of its own, so counters such as registrations per IP and hour never mix
  // with other test files sharing the redis-server.
  const accounts = config.REDIS_URL
    ? withLookupCache(
        await openRedisStore(config.REDIS_URL, { keyPrefix: options.redisKeyPrefix ?? `test-${randomUUID().slice(0, 8)}:`, cluster: config.REDIS_CLUSTER }),
      )
    : await openAccountStore(config);
  const app = createApp({ config, engine: options.engine, accounts, clock: options.clock });
  app.get('/v1/orderbook/__probe', (c) => {
    const start = c.req.query('start');
    return c.json({ earliest_allowed: checkHistoryWindow(c, { explicitStart: start === undefined ? undefined : Number(start) }) });
  });
  app.get('/v1/orderbook/__fail', () => {
    throw invalidParameter('limit', 'limit must be an integer between 1 and 100');
  });

  return {
    app,
    accounts,
    config,
    call: async (key, path, init = {}) =>
      app.request(path, { ...init, headers: { ...(key === null ? {} : { Authorization: `Bearer ${key}` }), ...(init.headers as Record<string, string>) } }),
    async newAccount(plan = 'free', planExpiresAt = null) {
      const key = generateApiKey(config.API_KEY_PREFIX);
      const account = await accounts.createAccount({ email: null, keyHash: hashApiKey(key), plan, plan_expires_at: planExpiresAt, now: options.clock.now() });
      return { id: account.id, key };
    },
    async close() {
      await accounts.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
