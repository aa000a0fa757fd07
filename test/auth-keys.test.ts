import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey, looksLikeApiKey } from '../src/auth/keys.js';
import { ManualClock } from '../src/clock.js';
import { type AccountApp, startAccountApp } from './support/account-app.js';
import { describeEachStore, openRawRedis } from './support/account-stores.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

const NOW = Date.UTC(2026, 5, 24, 15, 30, 0);
const KEY_SHAPE = /^th_live_[A-Za-z0-9_-]{43}$/;
const INVALID_KEY = {
  detail: { error: 'invalid_api_key', message: 'A valid API key is required: send the header Authorization: Bearer <key> (get a key with POST /v1/register).' },
};

let engine: TestEngine;
beforeAll(async () => {
  engine = await createTestEngine();
});
afterAll(async () => {
  await engine?.close();
});

describe('key format', () => {
  it('is prefix + live_ + 43 URL-safe base64 characters of 32 random bytes', () => {
    const key = generateApiKey('th_');
    expect(key).toMatch(KEY_SHAPE);
    expect(Buffer.from(key.slice('th_live_'.length), 'base64url')).toHaveLength(32);
    expect(generateApiKey('th_')).not.toBe(key);
    expect(generateApiKey('acme_')).toMatch(/^acme_live_[A-Za-z0-9_-]{43}$/);
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(looksLikeApiKey(key, 'th_')).toBe(true);
    expect(looksLikeApiKey(key, 'acme_')).toBe(false);
    expect(looksLikeApiKey(key.slice(0, -1), 'th_')).toBe(false);
    expect(looksLikeApiKey(`${key.slice(0, -1)}=`, 'th_')).toBe(false);
  });
});

describeEachStore('keys on the %s store', ({ kind, redisUrl, redisCluster }) => {
  let t: AccountApp;
  beforeAll(async () => {
    t = await startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW), redisUrl, redisCluster });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('register shows the key once; /v1/me and the store never hold it', async () => {
    const res = await t.app.request('/v1/register', { method: 'POST' });
    expect(res.status).toBe(201);
    const body = await res.json();
    const key: string = body.data.api_key;
    expect(key).toMatch(KEY_SHAPE);
    expect(body).toEqual({
      success: true,
      data: {
        api_key: key,
        plan: 'free',
        message: 'Store this key now: it is shown only once and cannot be recovered. Send it as Authorization: Bearer <key>.',
        example: `curl -H "Authorization: Bearer ${key}" http://tickhouse.test/v1/me`,
      },
    });
    const me = await t.call(key, '/v1/me');
    expect(me.status).toBe(200);
    const meText = await me.text();
    expect(meText).not.toContain(key.slice(8));

    const secret = key.slice('th_live_'.length);
    if (kind === 'embedded') {
      await t.accounts.close();
      const files = readdirSync(t.config.dataDir);
      expect(files).toContain('accounts.json');
      for (const f of files) expect(readFileSync(join(t.config.dataDir, f), 'utf8')).not.toContain(secret);
      expect(readFileSync(join(t.config.dataDir, 'accounts.json'), 'utf8')).toContain(hashApiKey(key));
      t = await startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW) });
    } else {
      // Every key and every value in Redis, whatever its type: the plaintext key appears nowhere.
      const raw = await openRawRedis(redisUrl!, redisCluster);
      try {
        const keys = await raw.keys('*');
        expect(keys.length).toBeGreaterThan(0);
        let sawHash = false;
        for (const k of keys) {
          expect(k).not.toContain(secret);
          const dump = (await raw.client.dumpBuffer(k))?.toString('latin1') ?? ''; // null: another suite deleted it meanwhile
          expect(dump).not.toContain(secret);
          if (k.includes(hashApiKey(key)) || dump.includes(hashApiKey(key))) sawHash = true;
        }
        expect(sawHash).toBe(true);
      } finally {
        raw.disconnect();
      }
    }
  });

  // Hash slots are a Redis notion: reported as skipped on the embedded store.
  it.runIf(kind !== 'embedded')('one account keeps its keys in one hash slot ({acct:<id>})', async () => {
    const { id, key } = await t.newAccount();
    expect((await t.call(key, '/v1/orderbook/__probe')).status).toBe(200);
    const raw = await openRawRedis(redisUrl!, redisCluster);
    try {
      const mine = (await raw.keys('*')).filter((k) => k.includes(id));
      expect(mine.sort()).toEqual([
        expect.stringMatching(new RegExp(`\\{acct:${id}\\}$`)),
        expect.stringMatching(new RegExp(`\\{acct:${id}\\}:day:2026-06-24$`)),
      ]);
      const ttl = await raw.client.ttl(mine.find((k) => k.includes(':day:'))!);
      expect(ttl).toBeGreaterThan(86_400);
      expect(ttl).toBeLessThanOrEqual(2 * 86_400);
    } finally {
      raw.disconnect();
    }
  });

  it('401 invalid_api_key for a missing header, another scheme, a malformed or unknown key', async () => {
    const { key } = await t.newAccount();
    const cases: Record<string, string>[] = [
      {},
      { Authorization: '' },
      { Authorization: `Basic ${key}` },
      { Authorization: key },
      { Authorization: 'Bearer' },
      { Authorization: 'Bearer ' },
      { Authorization: 'Bearer th_live_short' },
      { Authorization: `Bearer ${generateApiKey('th_')}` },
      { Authorization: `Bearer ${generateApiKey('xx_')}` },
      { Authorization: `Bearer ${key} extra` },
    ];
    for (const headers of cases) {
      for (const path of ['/v1/me', '/v1/orderbook/__probe']) {
        const res = await t.app.request(path, { headers });
        expect(res.status, JSON.stringify(headers)).toBe(401);
        expect(res.headers.get('WWW-Authenticate')).toBe('Bearer');
        expect(await res.json()).toEqual(INVALID_KEY);
      }
      const res = await t.app.request('/v1/keys/regenerate', { method: 'POST', headers });
      expect(res.status).toBe(401);
      expect(res.headers.get('WWW-Authenticate')).toBe('Bearer');
    }
    // The scheme name is case-insensitive (RFC 9110); the key itself is not.
    expect((await t.app.request('/v1/me', { headers: { Authorization: `bearer ${key}` } })).status).toBe(200);
    expect((await t.app.request('/v1/me', { headers: { Authorization: `Bearer ${key.toUpperCase()}` } })).status).toBe(401);
  });

  it('regeneration: the old key dies at once; id, plan, expiry and the counter stay', async () => {
    const expires = NOW + 10 * 86_400_000;
    const { id, key: oldKey } = await t.newAccount('monthly', expires);
    for (let i = 0; i < 3; i++) expect((await t.call(oldKey, '/v1/orderbook/__probe')).status).toBe(200);
    const before = await (await t.call(oldKey, '/v1/me')).json();

    const res = await t.call(oldKey, '/v1/keys/regenerate', { method: 'POST' });
    expect(res.status).toBe(200);
    const body = await res.json();
    const newKey: string = body.data.api_key;
    expect(body).toEqual({ success: true, data: { api_key: newKey } });
    expect(newKey).toMatch(KEY_SHAPE);
    expect(newKey).not.toBe(oldKey);

    expect((await t.call(oldKey, '/v1/me')).status).toBe(401);
    expect((await t.call(oldKey, '/v1/orderbook/__probe')).status).toBe(401);
    const after = await (await t.call(newKey, '/v1/me')).json();
    expect(after).toEqual(before);
    expect(after.data).toMatchObject({ id, plan: 'monthly', plan_active: true, plan_expires_at: '2026-07-04T15:30:00+00:00', requests_today: 3 });
    // Regenerating never counts, and the new key can regenerate again.
    expect((await t.call(newKey, '/v1/keys/regenerate', { method: 'POST' })).status).toBe(200);
    expect((await t.call(newKey, '/v1/me')).status).toBe(401);
  });
});

describe('configured key prefix', () => {
  it('issues and accepts <API_KEY_PREFIX>live_ keys', async () => {
    const t = await startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW), env: { API_KEY_PREFIX: 'acme_' } });
    try {
      const { data } = await (await t.app.request('/v1/register', { method: 'POST' })).json();
      expect(data.api_key).toMatch(/^acme_live_[A-Za-z0-9_-]{43}$/);
      expect((await t.call(data.api_key, '/v1/me')).status).toBe(200);
      expect((await t.call(`th_${data.api_key.slice(5)}`, '/v1/me')).status).toBe(401);
    } finally {
      await t.close();
    }
  });
});
