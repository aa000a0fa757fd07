import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { REDIS_SKIP, titled } from './support/account-stores.js';
import { startAccountApp, type AccountApp } from './support/account-app.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { freePort } from './support/global-setup.js';

/**
 * Fail closed and recover: this file runs its own redis-server (stopping the shared one would break
 * the Redis suites running in parallel), stops it, and starts it again on the same port with the
 * same arguments. An append-only file keeps the accounts across the restart, as a production Redis would.
 */
const NOW = Date.UTC(2026, 5, 24, 15, 30, 0);
const UNAVAILABLE = { detail: { error: 'service_unavailable', message: 'The account store is unavailable; retry shortly.' } };

let engine: TestEngine;
let redis: ChildProcess | undefined;
let port: number;
let dir: string;

function startRedis() {
  redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always'], { stdio: 'ignore' });
  return waitFor(async () => canConnect());
}

async function stopRedis() {
  const proc = redis!;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
  redis = undefined;
}

function canConnect() {
  return new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1', () => { s.end(); resolve(true); });
    s.on('error', () => resolve(false));
  });
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('condition not met in time');
}

describe.skipIf(REDIS_SKIP !== null)(titled('Redis outage', REDIS_SKIP), () => {
  let t: AccountApp;
  beforeAll(async () => {
    engine = await createTestEngine();
    port = await freePort();
    dir = mkdtempSync(join(tmpdir(), 'tickhouse-redis-outage-'));
    await startRedis();
    t = await startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW), redisUrl: `redis://127.0.0.1:${port}`, redisKeyPrefix: 'outage:' });
  });
  afterAll(async () => {
    await t?.close();
    redis?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
    await engine?.close();
  });

  it('answers 503 with Retry-After on every authenticated route while Redis is down, and recovers by itself', async () => {
    const { data } = await (await t.app.request('/v1/register', { method: 'POST' })).json();
    const key: string = data.api_key;
    expect((await t.call(key, '/v1/orderbook/__probe')).status).toBe(200);
    expect((await t.call(key, '/v1/me')).status).toBe(200);

    await stopRedis();
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

    await startRedis();
    // The client reconnects in the background; no restart of the service.
    await waitFor(async () => (await t.call(key, '/v1/me')).status === 200);
    const me = await (await t.call(key, '/v1/me')).json();
    expect(me.data.requests_today).toBe(1);
    expect((await t.call(key, '/v1/orderbook/__probe')).status).toBe(200);
    expect((await t.app.request('/v1/register', { method: 'POST' })).status).toBe(201);
    expect((await t.app.request('/readyz')).status).toBe(200);
  });

  it('starts while Redis is down (503 meanwhile) and serves once it comes up', async () => {
    const { data } = await (await t.app.request('/v1/register', { method: 'POST' })).json();
    await stopRedis();
    const late = await startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW), redisUrl: `redis://127.0.0.1:${port}`, redisKeyPrefix: 'outage:' });
    try {
      const res = await late.call(data.api_key, '/v1/me');
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual(UNAVAILABLE);
      await startRedis();
      await waitFor(async () => (await late.call(data.api_key, '/v1/me')).status === 200);
    } finally {
      await late.close();
    }
  });
});
