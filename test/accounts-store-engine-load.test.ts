import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'chdb';
import { afterAll, expect, it } from 'vitest';
import { openEmbeddedStore } from '../src/accounts/embedded-store.js';

/**
 * The embedded engine runs every query on libuv's thread pool, which Node's async fs shares. With
 * each pool thread inside a long query, the embedded account store's writes must still land:
 * account changes and daily counters on disk while the queries run, not after them (issue 24: under
 * export load counters reached disk 3-4 s late, and a kill -9 then lost counted requests).
 */
const dir = mkdtempSync(join(tmpdir(), 'tickhouse-store-load-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('account writes and counter flushes do not wait for engine queries holding every pool thread', { timeout: 60_000 }, async () => {
  const store = await openEmbeddedStore(dir);
  const sessions = Array.from({ length: 4 }, () => new Session(join(dir, 'engine')));
  let queriesDone = 0;
  // Four ~9 s queries: as many as libuv's default pool has threads (UV_THREADPOOL_SIZE is unset here).
  const busy = sessions.map((s) => s.queryAsync('SELECT sleepEachRow(0.3) FROM numbers(30) SETTINGS max_block_size = 1 FORMAT Null').then(() => queriesDone++));
  const account = await store.createAccount({ email: null, keyHash: 'k'.repeat(64), plan: 'free', plan_expires_at: null, now: Date.UTC(2026, 10, 26) });
  expect(queriesDone).toBe(0);
  await store.consumeDaily(account.id, '2026-11-26', 100);
  const onDisk = () => JSON.parse(readFileSync(join(dir, 'accounts.json'), 'utf8')).counters[`${account.id}|2026-11-26`];
  while (onDisk() !== 1) {
    expect(queriesDone).toBe(0);
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(queriesDone).toBe(0);
  await Promise.all(busy);
  sessions.forEach((s) => s.cleanup());
  await store.close();
});
