import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, inject } from 'vitest';
import { openEmbeddedStore } from '../../src/accounts/embedded-store.js';
import { withLookupCache } from '../../src/accounts/lookup-cache.js';
import { openRedisStore } from '../../src/accounts/redis-store.js';
import type { AccountStore } from '../../src/accounts/store.js';

/**
 * The two AccountStore implementations as the service opens them (with the lookup cache), for
 * suites that must pass on both. Redis runs against the redis-server of global-setup, each store
 * under its own key prefix; without redis-server the Redis variant is reported as skipped (and
 * warned about), or fails when TEST_REQUIRE_REDIS=1.
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

/** Why the Redis suites cannot run on this machine, or null when they can. */
export const REDIS_SKIP: string | null = redisUrl ? null : 'redis-server is not installed';

/** A title that says why its suite or test is skipped, when it is (vitest prints titles, not conditions). */
export function titled(title: string, skip: string | null): string {
  return skip === null ? title : `${title} (skipped: ${skip})`;
}

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

/** One AccountStore implementation the suites run on. */
export interface StoreVariant {
  kind: 'embedded' | 'redis';
  /** The redis-server URL for the Redis variant; undefined for the embedded one (and when there is no redis-server). */
  redisUrl: string | undefined;
  open(): Promise<TestStore>;
  /** Why the variant cannot run on this machine; null when it can. */
  skip: string | null;
}

export const STORE_VARIANTS: StoreVariant[] = [
  { kind: 'embedded', redisUrl: undefined, open: openEmbeddedTestStore, skip: null },
  { kind: 'redis', redisUrl: redisUrl || undefined, open: () => openRedisTestStore(), skip: REDIS_SKIP },
];

/**
 * A `describe` per store variant, `%s` in the title standing for its kind. A variant that cannot run
 * here is still declared, as a skipped suite whose title says why: never silently left out of the run.
 */
export function describeEachStore(title: string, body: (variant: StoreVariant) => void): void {
  for (const variant of STORE_VARIANTS) {
    describe.skipIf(variant.skip !== null)(titled(title.replace('%s', variant.kind), variant.skip), () => body(variant));
  }
}
