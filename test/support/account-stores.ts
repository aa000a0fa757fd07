import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { describe, inject } from 'vitest';
import { openEmbeddedStore } from '../../src/accounts/embedded-store.js';
import { withLookupCache } from '../../src/accounts/lookup-cache.js';
import { openRedisStore } from '../../src/accounts/redis-store.js';
import type { AccountStore } from '../../src/accounts/store.js';

/**
 * The AccountStore implementations as the service opens them (with the lookup cache), for suites
 * that must pass on all: embedded, Redis (the redis-server of global-setup) and Redis Cluster (its
 * 3-master cluster), each Redis store under its own key prefix. Without redis-server (or redis-cli,
 * for the cluster) a Redis variant is reported as skipped (and warned about), or fails when
 * TEST_REQUIRE_REDIS=1.
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
export const redisClusterUrl = inject('redisClusterUrl');

/** Why the Redis suites cannot run on this machine, or null when they can. */
export const REDIS_SKIP: string | null = redisUrl ? null : 'redis-server is not installed';
/** Why the Redis Cluster suites cannot run on this machine, or null when they can. */
export const REDIS_CLUSTER_SKIP: string | null = REDIS_SKIP ?? (redisClusterUrl ? null : 'redis-cli is not installed');

/** A title that says why its suite or test is skipped, when it is (vitest prints titles, not conditions). */
export function titled(title: string, skip: string | null): string {
  return skip === null ? title : `${title} (skipped: ${skip})`;
}

if (!redisUrl || !redisClusterUrl) {
  if (process.env.TEST_REQUIRE_REDIS === '1') throw new Error('redis-server and the Redis Cluster are required (TEST_REQUIRE_REDIS=1) but were not started');
  const skipped = REDIS_SKIP ? `${REDIS_SKIP}: the Redis account-store suites are` : `${REDIS_CLUSTER_SKIP}: the Redis Cluster account-store suites are`;
  console.warn(`\n!!! ${skipped} SKIPPED (set TEST_REQUIRE_REDIS=1 to fail instead) !!!\n`);
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

export async function openRedisTestStore(url = redisUrl, cluster = false): Promise<TestStore> {
  const keyPrefix = `test-${randomUUID().slice(0, 8)}:`;
  let store = withLookupCache(await openRedisStore(url, { keyPrefix, cluster }));
  return {
    get store() {
      return store;
    },
    location: keyPrefix,
    async reopen() {
      await store.close();
      store = withLookupCache(await openRedisStore(url, { keyPrefix, cluster }));
      return store;
    },
    async close() {
      await store.close();
    },
  };
}

/** One AccountStore implementation the suites run on. */
export interface StoreVariant {
  kind: 'embedded' | 'redis' | 'redis-cluster';
  /** REDIS_URL of the Redis variants; undefined for the embedded one (and when there is no redis-server). */
  redisUrl: string | undefined;
  /** REDIS_CLUSTER: the URL names seed nodes of a cluster. */
  redisCluster: boolean;
  open(): Promise<TestStore>;
  /** Why the variant cannot run on this machine; null when it can. */
  skip: string | null;
}

export const STORE_VARIANTS: StoreVariant[] = [
  { kind: 'embedded', redisUrl: undefined, redisCluster: false, open: openEmbeddedTestStore, skip: null },
  { kind: 'redis', redisUrl: redisUrl || undefined, redisCluster: false, open: () => openRedisTestStore(), skip: REDIS_SKIP },
  {
    kind: 'redis-cluster',
    redisUrl: redisClusterUrl || undefined,
    redisCluster: true,
    open: () => openRedisTestStore(redisClusterUrl, true),
    skip: REDIS_CLUSTER_SKIP,
  },
];

/** The Redis variants alone, for suites about what the store writes into Redis. */
export const REDIS_VARIANTS = STORE_VARIANTS.filter((v) => v.kind !== 'embedded');

/**
 * A `describe` per store variant, `%s` in the title standing for its kind. A variant that cannot run
 * here is still declared, as a skipped suite whose title says why: never silently left out of the run.
 */
export function describeEachStore(title: string, body: (variant: StoreVariant) => void): void {
  for (const variant of STORE_VARIANTS) {
    describe.skipIf(variant.skip !== null)(titled(title.replace('%s', variant.kind), variant.skip), () => body(variant));
  }
}

/**
 * A plain client on the Redis behind a variant, for tests that look at what the store wrote. On a
 * cluster `keys` asks every master (KEYS only sees the node it is sent to); `masters` are the
 * servers, for settings each must get.
 */
export async function openRawRedis(url: string, cluster: boolean) {
  if (!cluster) {
    const client = new Redis(url);
    return { client, masters: () => [client], keys: (pattern: string) => client.keys(pattern), disconnect: () => client.disconnect() };
  }
  const client = new Cluster(url.split(',').map((u) => ({ host: new URL(u).hostname, port: Number(new URL(u).port) })));
  await client.ping(); // queued until the client knows the masters
  return {
    client,
    masters: () => client.nodes('master'),
    keys: async (pattern: string) => (await Promise.all(client.nodes('master').map((node) => node.keys(pattern)))).flat(),
    disconnect: () => client.disconnect(),
  };
}
