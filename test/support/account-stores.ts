import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { openEmbeddedStore } from '../../src/accounts/embedded-store.js';
import { withLookupCache } from '../../src/accounts/lookup-cache.js';
import { openRedisStore } from '../../src/accounts/redis-store.js';
import type { AccountStore } from '../../src/accounts/store.js';

/**
 * The two AccountStore implementations as the service opens them (with the lookup cache), for
 * suites that must pass on both. Redis runs against the redis-server of global-setup, each store
 * under its own key prefix; without redis-server the Redis variant is skipped loudly, or fails
 * when TEST_REQUIRE_REDIS=1.
 */
export interface TestStore {
  store: AccountStore;
  /** Closes and opens the same data again (a restart). */
  reopen(): Promise<AccountStore>;
  close(): Promise<void>;
  /** Embedded only: the data directory. Redis only: the key prefix. */
  location: string;
}

export const redisUrl = inject('redisUrl');

if (!redisUrl) {
  if (process.env.TEST_REQUIRE_REDIS === '1') throw new Error('redis-server is required (TEST_REQUIRE_REDIS=1) but was not started');
  console.warn('\n!!! redis-server is not installed: the Redis account-store suites are SKIPPED (set TEST_REQUIRE_REDIS=1 to fail instead) !!!\n');
}

export async function openEmbeddedTestStore(): Promise<TestStore> {
  const dir = mkdtempSync(join(tmpdir(), 'tickhouse-accounts-'));
  let store = withLookupCache(await openEmbeddedStore(dir));
  return {
    get store() {
      return store;
    },
    location: dir,
    async reopen() {
      await store.close();
      store = withLookupCache(await openEmbeddedStore(dir));
      return store;
    },
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function openRedisTestStore(url = redisUrl): Promise<TestStore> {
  const keyPrefix = `test-${randomUUID().slice(0, 8)}:`;
  let store = withLookupCache(await openRedisStore(url, { keyPrefix }));
  return {
    get store() {
      return store;
    },
    location: keyPrefix,
    async reopen() {
      await store.close();
      store = withLookupCache(await openRedisStore(url, { keyPrefix }));
      return store;
    },
    async close() {
      await store.close();
    },
  };
}

/** `[name, opener]` pairs for describe.each; Redis only when a redis-server runs. */
export const STORE_KINDS: [string, () => Promise<TestStore>][] = [
  ['embedded', openEmbeddedTestStore],
  ...(redisUrl ? ([['redis', () => openRedisTestStore()]] as [string, () => Promise<TestStore>][]) : []),
];
