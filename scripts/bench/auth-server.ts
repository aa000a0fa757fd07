import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { openEmbeddedStore } from '../../src/accounts/embedded-store.js';
import { withLookupCache } from '../../src/accounts/lookup-cache.js';
import { openRedisStore } from '../../src/accounts/redis-store.js';
import { generateApiKey, hashApiKey } from '../../src/auth/keys.js';
import { dailyLimit, requireAuth } from '../../src/auth/middleware.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { AppEnv } from '../../src/http/context.js';
import { ApiError } from '../../src/http/errors.js';
import { accessLog, requestId } from '../../src/http/middleware.js';
import { setLogLevel } from '../../src/log.js';

/**
 * The server half of the auth benchmark (scripts/bench/auth.ts runs it as a child process so the
 * load generator does not share its CPU): one trivial handler mounted twice, behind requireAuth +
 * dailyLimit as app.ts mounts them on data paths, and bare. The account store is the configured one
 * (REDIS_URL, under a throw-away key prefix) or a throw-away embedded store. Prints one JSON line:
 * {port, key, store}.
 */
setLogLevel('silent');
const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' });
const dir = config.REDIS_URL ? null : mkdtempSync(join(tmpdir(), 'tickhouse-bench-auth-'));
const accounts = withLookupCache(
  config.REDIS_URL ? await openRedisStore(config.REDIS_URL, { keyPrefix: `bench-${randomUUID()}:` }) : await openEmbeddedStore(dir!),
);
const deps = { config, accounts, clock: systemClock };

const key = generateApiKey(config.API_KEY_PREFIX);
await accounts.createAccount({ email: null, keyHash: hashApiKey(key), plan: 'unlimited', plan_expires_at: Date.now() + 86_400_000, now: Date.now() });

// The same outer middleware as app.ts on both routes, so the difference is auth + counting alone.
const app = new Hono<AppEnv>();
app.use('*', requestId(), accessLog());
app.use('/v1/orderbook/*', requireAuth(deps), dailyLimit(deps));
const trivial = (c: { json: (body: unknown) => Response }) => c.json({ success: true, data: { ok: true } });
app.get('/v1/orderbook/bench', trivial);
app.get('/open/bench', trivial);
app.onError((err, c) => (err instanceof ApiError ? c.json(err.body(), err.status) : c.json({ error: String(err) }, 500)));

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(`${JSON.stringify({ port: info.port, key, store: accounts.kind })}\n`);
});

process.on('SIGTERM', () => {
  server.close();
  void accounts.close().finally(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
});
