import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runAdminCommand, UsageError } from '../src/admin/commands.js';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { printDemoKeyOnFirstStart } from '../src/demo/demo-key.js';
import { startAccountApp } from './support/account-app.js';
import { openEmbeddedTestStore, openRedisTestStore, REDIS_SKIP, redisUrl, type TestStore, titled } from './support/account-stores.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

const NOW = Date.UTC(2026, 5, 24, 15, 30, 0, 250);
const KEY_SHAPE = /^th_live_[A-Za-z0-9_-]{43}$/;

let engine: TestEngine;
beforeAll(async () => {
  engine = await createTestEngine();
});
afterAll(async () => {
  await engine?.close();
});

describe('admin commands', () => {
  let t: TestStore;
  const clock = new ManualClock(NOW);
  const run = (...argv: string[]) => runAdminCommand(argv, { accounts: t.store, clock, apiKeyPrefix: 'th_' });
  afterEach(async () => {
    await t?.close();
  });

  it('create-account prints the key once; show and set-plan accept the key or the id', async () => {
    t = await openEmbeddedTestStore();
    const created = await run('create-account', '--email', 'ops@example.com', '--plan', 'monthly');
    expect(created).toEqual({
      api_key: expect.stringMatching(KEY_SHAPE),
      note: 'The key is shown only this once; only its hash is stored.',
      id: expect.any(String),
      email: 'ops@example.com',
      plan: 'monthly',
      plan_active: true,
      plan_expires_at: '2026-07-24T15:30:01+00:00',
      data_access_days: 30,
      rate_limit_daily: 50000,
      requests_today: 0,
      created_at: '2026-06-24T15:30:00+00:00',
    });
    const { api_key, note: _note, ...account } = created;
    expect(await run('show', api_key as string)).toEqual(account);
    expect(await run('show', account.id as string)).toEqual(account);

    expect(await run('set-plan', account.id as string, 'unlimited', '--days', '3')).toMatchObject({
      plan: 'unlimited',
      plan_expires_at: '2026-06-27T15:30:01+00:00',
      rate_limit_daily: 500000,
    });
    expect(await run('set-plan', api_key as string, 'daily')).toMatchObject({ plan: 'daily', plan_expires_at: '2026-06-25T15:30:01+00:00' });
    expect(await run('set-plan', api_key as string, 'free')).toMatchObject({ plan: 'free', plan_active: true, plan_expires_at: null });
    expect(await run('create-account')).toMatchObject({ plan: 'free', email: null, plan_expires_at: null });
  });

  it('explains what is wrong', async () => {
    t = await openEmbeddedTestStore();
    await expect(run()).rejects.toThrow(UsageError);
    await expect(run('drop-everything')).rejects.toThrow(/unknown command "drop-everything"/);
    await expect(run('create-account', '--plan', 'gold')).rejects.toThrow('plan must be one of free, daily, monthly, unlimited; got "gold"');
    await expect(run('create-account', '--email', 'nope')).rejects.toThrow('--email "nope" is not an e-mail address');
    await expect(run('create-account', '--colour', 'red')).rejects.toThrow(/unknown option --colour/);
    await expect(run('show', 'nope')).rejects.toThrow('"nope" is neither an API key (th_live_…) nor an account id (UUID)');
    await expect(run('show', '00000000-0000-4000-8000-000000000000')).rejects.toThrow('no account for 00000000-0000-4000-8000-000000000000');
    await expect(run('show', `th_live_${'A'.repeat(43)}`)).rejects.toThrow('no account for that key');
    // A key mistyped by one character is no key: quoted by its first 8 characters only (issue 35).
    const typo = run('show', `th_live_${'A'.repeat(42)}Bx`);
    await expect(typo).rejects.toThrow('"th_live_…" (52 characters) is neither an API key (th_live_…) nor an account id (UUID)');
    await expect(typo).rejects.not.toThrow('AAAA');
    await expect(run('show', 'some-long-thing-12345')).rejects.toThrow('"some-lon…" (21 characters) is neither an API key');
    const { id } = (await run('create-account')) as { id: string };
    await expect(run('set-plan', id, 'daily', '--days', '0')).rejects.toThrow('--days must be an integer between 1 and 36500; got "0"');
  });

  it.skipIf(REDIS_SKIP !== null)(titled('works the same on Redis', REDIS_SKIP), async () => {
    t = await openRedisTestStore();
    const created = await run('create-account', '--plan', 'daily');
    expect(await run('show', created.api_key as string)).toMatchObject({ id: created.id, plan: 'daily', plan_expires_at: '2026-06-25T15:30:01+00:00' });
  });
});

const admin = (env: NodeJS.ProcessEnv, argv: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', ...argv], { env, encoding: 'utf8' });

describe('npm run admin', () => {
  it('runs against the embedded store named by DATA_DIR', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-admin-'));
    try {
      const env = { ...process.env, DATA_DIR: dataDir, REDIS_URL: '' };
      const created = admin(env, ['create-account', '--plan', 'unlimited']);
      expect(created.stderr).toBe('');
      expect(created.status).toBe(0);
      const { api_key, id } = JSON.parse(created.stdout);
      const shown = admin(env, ['show', api_key]);
      expect(JSON.parse(shown.stdout)).toMatchObject({ id, plan: 'unlimited', plan_active: true });
      const bad = admin(env, ['show', 'nope']);
      expect(bad.status).toBe(1);
      expect(bad.stderr).toBe('tickhouse admin: "nope" is neither an API key (th_live_…) nor an account id (UUID)\n');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('demo key on first start', () => {
  it('embedded: printed once with a curl example, on plan unlimited; never again', async () => {
    const t = await startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW) });
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    let key: string | null;
    let printed: string;
    try {
      key = await printDemoKeyOnFirstStart({ config: t.config, engine: engine.engine, accounts: t.accounts, clock: new ManualClock(NOW) });
      expect(await printDemoKeyOnFirstStart({ config: t.config, engine: engine.engine, accounts: t.accounts, clock: new ManualClock(NOW) })).toBeNull();
      printed = out.mock.calls.map((c) => String(c[0])).join('');
    } finally {
      out.mockRestore();
    }
    try {
      expect(key).toMatch(KEY_SHAPE);
      expect(printed).toContain(`curl -H "Authorization: Bearer ${key}" http://tickhouse.test/v1/me`);
      expect(printed.split(key!).length - 1).toBe(2);
      const me = await (await t.call(key!, '/v1/me')).json();
      expect(me.data).toMatchObject({ plan: 'unlimited', plan_active: true, rate_limit_daily: 500000, data_access_days: 3650 });
    } finally {
      await t.close();
    }
  });

  it.skipIf(REDIS_SKIP !== null)(titled('never in Redis mode', REDIS_SKIP), async () => {
    const t = await openRedisTestStore();
    try {
      const config = loadConfig({ REDIS_URL: redisUrl, LOG_LEVEL: 'silent' });
      expect(await printDemoKeyOnFirstStart({ config, engine: engine.engine, accounts: t.store, clock: new ManualClock(NOW) })).toBeNull();
      expect(await t.store.countAccounts()).toBe(0);
    } finally {
      await t.close();
    }
  });
});
