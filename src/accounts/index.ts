import type { Config } from '../config.js';
import { openEmbeddedStore } from './embedded-store.js';
import { withLookupCache } from './lookup-cache.js';
import { openRedisStore } from './redis-store.js';
import type { AccountStore } from './store.js';

/** Redis (or a Redis Cluster) when REDIS_URL is set, the embedded store under DATA_DIR otherwise; key lookups cached. */
export async function openAccountStore(config: Pick<Config, 'REDIS_URL' | 'REDIS_CLUSTER' | 'dataDir'>): Promise<AccountStore> {
  const store = config.REDIS_URL ? await openRedisStore(config.REDIS_URL, { cluster: config.REDIS_CLUSTER }) : await openEmbeddedStore(config.dataDir);
  return withLookupCache(store);
}
