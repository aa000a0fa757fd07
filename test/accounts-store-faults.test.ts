import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEmbeddedStore } from '../src/accounts/embedded-store.js';
import { hashApiKey } from '../src/auth/keys.js';
import { ManualClock } from '../src/clock.js';
import { type AccountApp, startAccountApp } from './support/account-app.js';
import { REDIS_VARIANTS } from './support/account-stores.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { breakAccountWrites } from './support/write-faults.js';

/**
 * The account store when its disk is full or read-only (real ENOSPC / EACCES): a refused write
 * answers 503 and changes nothing, not in memory and not on disk; readiness says so.
 */
const NOW = Date.UTC(2026, 5, 24, 15, 30, 0);
const UNAVAILABLE = { detail: { error: 'service_unavailable', message: 'The account store is unavailable; retry shortly.' } };
let engine: TestEngine;
let t: AccountApp;
const clock = new ManualClock(NOW);
beforeAll(async () => {
  engine = await createTestEngine();
  t = await startAccountApp({ engine: engine.engine, clock });
});
afterAll(async () => {
  await t?.close();
  await engine?.close();
});

const read = async (res: Response) => [res.status, await res.json()];
const onDisk = () => JSON.parse(readFileSync(join(t.config.dataDir, 'accounts.json'), 'utf8')) as { accounts: unknown[]; invoices: unknown[] };

describe.each(['ENOSPC', 'EACCES'] as const)('writes fail with %s', (errno) => {
  /** Runs `during` with writes broken, then repairs them. */
  const whileBroken = async (during: () => Promise<void>) => {
    const repair = breakAccountWrites(t.config.dataDir, errno);
    try {
      await during();
    } finally {
      repair();
    }
  };

  it('/readyz says the account store is not ready, and ready again once writes work', async () => {
    await whileBroken(async () => {
      // A passing check answers for a second (routes/health.ts): the next one is due.
      clock.advance(1_000);
      const res = await t.app.request('/readyz');
      expect(res.headers.get('Retry-After')).toBe('5');
      expect(await read(res)).toEqual([503, { status: 'unavailable', clickhouse: true, account_store: false }]);
    });
    expect(await read(await t.app.request('/readyz'))).toEqual([200, { status: 'ready', clickhouse: true, account_store: true }]);
  });

  it('regenerate: 503 and the old key still works; once writes work, regeneration does', async () => {
    const { key } = await t.newAccount();
    await whileBroken(async () => {
      expect(await read(await t.call(key, '/v1/keys/regenerate', { method: 'POST' }))).toEqual([503, UNAVAILABLE]);
      expect((await t.call(key, '/v1/me')).status).toBe(200);
    });
    expect((await t.call(key, '/v1/me')).status).toBe(200);
    const regenerated = await t.call(key, '/v1/keys/regenerate', { method: 'POST' });
    expect(regenerated.status).toBe(200);
    const { api_key } = (await regenerated.json()).data;
    expect((await t.call(api_key, '/v1/me')).status).toBe(200);
    expect((await t.call(key, '/v1/me')).status).toBe(401);
  });

  it('register: 503 and no account, in memory or in any later snapshot', async () => {
    const before = await t.accounts.countAccounts();
    await whileBroken(async () => {
      expect(await read(await t.app.request('/v1/register', { method: 'POST', headers: { 'X-Forwarded-For': '10.0.0.1' } }))).toEqual([503, UNAVAILABLE]);
    });
    expect(await t.accounts.countAccounts()).toBe(before);
    await t.newAccount(); // the next write
    expect(onDisk().accounts).toHaveLength(before + 1);
  });

  it('subscribe: 503 and no invoice recorded', async () => {
    const { id, key } = await t.newAccount();
    const invoicesBefore = onDisk().invoices.length;
    await whileBroken(async () => {
      expect(
        await read(await t.call(key, '/v1/billing/subscribe', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"plan":"monthly"}' })),
      ).toEqual([503, UNAVAILABLE]);
    });
    expect(await t.accounts.listInvoices(id, 10)).toEqual([]);
    await t.newAccount();
    expect(onDisk().invoices).toHaveLength(invoicesBefore);
  });
});

describe('a store reopened after refused writes', () => {
  it('holds exactly what was acknowledged', async () => {
    const { id, key } = await t.newAccount();
    const repair = breakAccountWrites(t.config.dataDir, 'ENOSPC');
    try {
      expect((await t.call(key, '/v1/keys/regenerate', { method: 'POST' })).status).toBe(503);
    } finally {
      repair();
    }
    await t.accounts.close();
    const reopened = await openEmbeddedStore(t.config.dataDir);
    try {
      expect(await reopened.findByKeyHash(hashApiKey(key))).toMatchObject({ id });
    } finally {
      await reopened.close();
    }
    await t.close();
    t = await startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW) });
  });
});

const REGENERATION_STORES = [{ kind: 'embedded', redisUrl: undefined, redisCluster: false }, ...REDIS_VARIANTS.filter((v) => v.skip === null)];
describe.each(REGENERATION_STORES)('20 concurrent regenerations with one key on the $kind store', ({ redisUrl, redisCluster }) => {
  let r: AccountApp;
  beforeAll(async () => {
    r = await startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW), redisUrl, redisCluster });
  });
  afterAll(() => r?.close());

  it('exactly one 200; the others 401; only the one new key works', async () => {
    const { key } = await r.newAccount();
    const responses = await Promise.all(Array.from({ length: 20 }, () => r.call(key, '/v1/keys/regenerate', { method: 'POST' })));
    const answers = await Promise.all(responses.map(read));
    const won = answers.filter(([status]) => status === 200);
    expect(won).toHaveLength(1);
    expect(answers.filter(([status]) => status === 401)).toEqual(
      Array(19).fill([
        401,
        {
          detail: {
            error: 'invalid_api_key',
            message: 'A valid API key is required: send the header Authorization: Bearer <key> (get a key with POST /v1/register).',
          },
        },
      ]),
    );
    expect(responses.filter((res) => res.status === 401).every((res) => res.headers.get('WWW-Authenticate') === 'Bearer')).toBe(true);
    const newKey = (won[0][1] as { data: { api_key: string } }).data.api_key;
    expect((await r.call(newKey, '/v1/me')).status).toBe(200);
    expect((await r.call(key, '/v1/me')).status).toBe(401);
  });
});
