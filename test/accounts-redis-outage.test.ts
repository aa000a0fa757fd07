import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { type AccountApp, startAccountApp } from './support/account-app.js';
import { REDIS_CLUSTER_SKIP, REDIS_SKIP, titled } from './support/account-stores.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { freePort } from './support/global-setup.js';
import { startRedisCluster } from './support/redis-cluster.js';

/**
 * Fail closed and recover, on one Redis and on a Redis Cluster: this file runs its own (stopping the
 * shared ones would break the Redis suites running in parallel), stops it, and starts it again on
 * the same ports with the same arguments. Append-only files keep the accounts across the restart,
 * as in production; the cluster's nodes are killed outright and come back with their persisted
 * cluster config.
 */
const NOW = Date.UTC(2026, 5, 24, 15, 30, 0);
const UNAVAILABLE = { detail: { error: 'service_unavailable', message: 'The account store is unavailable; retry shortly.' } };

let engine: TestEngine;
beforeAll(async () => {
  engine = await createTestEngine();
});
afterAll(async () => {
  await engine?.close();
});

/** A Redis this file may take down: REDIS_URL and REDIS_CLUSTER for it, and its switch. */
interface OwnRedis {
  url: string;
  cluster: boolean;
  down(): Promise<void>;
  up(): Promise<void>;
  /** A cluster only: start the nodes, not waiting until the cluster is ok. */
  forming?(): Promise<void>;
  remove(): Promise<void>;
}

async function startSingleRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tickhouse-redis-outage-'));
  let redis: ChildProcess | undefined;
  const up = () => {
    redis = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always'],
      { stdio: 'ignore' },
    );
    return waitFor(() => canConnect(port));
  };
  await up();
  return {
    url: `redis://127.0.0.1:${port}`,
    cluster: false,
    async down() {
      const proc = redis!;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
      redis = undefined;
    },
    up,
    async remove() {
      redis?.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startOwnCluster(): Promise<OwnRedis> {
  const cluster = await startRedisCluster({ durable: true });
  return {
    url: cluster.url,
    cluster: true,
    down: cluster.kill,
    up: () => cluster.restart(),
    forming: () => cluster.restart({ forming: true }),
    remove: cluster.stop,
  };
}

function canConnect(port: number) {
  return new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      s.end();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/**
 * A new account on the app under test, once its store answers: a test that starts right after the
 * one before brought the store back may find the client still reconnecting (503 meanwhile).
 */
async function registered(t: AccountApp): Promise<{ api_key: string }> {
  let res = await t.app.request('/v1/register', { method: 'POST' });
  await waitFor(async () => res.status === 201 || ((res = await t.app.request('/v1/register', { method: 'POST' })), res.status === 201));
  return (await res.json()).data;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('condition not met in time');
}

const BACKENDS = [
  { name: 'one Redis', start: startSingleRedis, skip: REDIS_SKIP },
  { name: 'a Redis Cluster', start: startOwnCluster, skip: REDIS_CLUSTER_SKIP },
];

for (const backend of BACKENDS)
  describe.skipIf(backend.skip !== null)(titled(`Redis outage on ${backend.name}`, backend.skip), () => {
    let redis: OwnRedis;
    let t: AccountApp;
    const startApp = () =>
      startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW), redisUrl: redis.url, redisCluster: redis.cluster, redisKeyPrefix: 'outage:' });
    beforeAll(async () => {
      redis = await backend.start();
      t = await startApp();
    });
    afterAll(async () => {
      await t?.close();
      await redis?.remove();
    });

    it('answers 503 with Retry-After on every authenticated route while Redis is down, and recovers by itself', async () => {
      const data = await registered(t);
      const key: string = data.api_key;
      expect((await t.call(key, '/v1/orderbook/__probe')).status).toBe(200);
      expect((await t.call(key, '/v1/me')).status).toBe(200);
      // More accounts, each with a counted request: on a cluster they spread over its masters.
      const others = await Promise.all(Array.from({ length: 6 }, () => t.newAccount()));
      for (const other of others) expect((await t.call(other.key, '/v1/orderbook/__probe')).status).toBe(200);

      await redis.down();
      const fresh = `th_live_${'A'.repeat(43)}`;
      const attempts: [string | null, string, RequestInit?][] = [
        [key, '/v1/me'],
        [key, '/v1/orderbook/__probe'],
        [key, '/v1/keys/regenerate', { method: 'POST' }],
        [fresh, '/v1/me'],
        [null, '/v1/register', { method: 'POST' }],
      ];
      for (const [k, path, init] of attempts) {
        const res = await t.call(k, path, init);
        expect(res.status, path).toBe(503);
        expect(res.headers.get('retry-after')).toBe('5');
        expect(await res.json()).toEqual(UNAVAILABLE);
      }
      const ready = await t.app.request('/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ account_store: false });

      await redis.up();
      // The client reconnects in the background; no restart of the service.
      await waitFor(async () => (await t.call(key, '/v1/me')).status === 200);
      const me = await (await t.call(key, '/v1/me')).json();
      expect(me.data.requests_today).toBe(1);
      for (const other of others) expect((await (await t.call(other.key, '/v1/me')).json()).data).toMatchObject({ id: other.id, requests_today: 1 });
      expect((await t.call(key, '/v1/orderbook/__probe')).status).toBe(200);
      expect((await t.app.request('/v1/register', { method: 'POST' })).status).toBe(201);
      expect((await t.app.request('/readyz')).status).toBe(200);
    });

    it('starts while Redis is down (503 meanwhile) and serves once it comes up', async () => {
      const data = await registered(t);
      await redis.down();
      const late = await startApp();
      try {
        const res = await late.call(data.api_key, '/v1/me');
        expect(res.status).toBe(503);
        expect(await res.json()).toEqual(UNAVAILABLE);
        await redis.up();
        await waitFor(async () => (await late.call(data.api_key, '/v1/me')).status === 200);
      } finally {
        await late.close();
      }
    });

    // ioredis' Cluster#connect() never settles when its first ready check finds the cluster not ok yet.
    it.runIf(backend.name === 'a Redis Cluster')('starts while the cluster is still forming and serves once it is ok', async () => {
      const data = await registered(t);
      await redis.down();
      await redis.forming!();
      const late = await startApp();
      try {
        await waitFor(async () => (await late.call(data.api_key, '/v1/me')).status === 200);
      } finally {
        await late.close();
      }
    });
  });
