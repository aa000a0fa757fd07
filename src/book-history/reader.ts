import type { Engine } from '../clickhouse/engine.js';
import { MAX_TIME_MS } from '../queries/orderbook.js';
import { BookCache } from './cache.js';
import { bookStateAt } from './fold.js';
import type { BookReader } from './port.js';

/**
 * Every read is one query of book_snapshots and ticks (bookStateAt), whatever lies between the
 * snapshot and the instant; nothing is kept, nothing is known about later events.
 */
export function engineBookReader(engine: Engine): BookReader {
  return {
    async at(assetId, at, signal) {
      const state = await bookStateAt(engine, assetId, at, signal);
      return state && { ...state, next: Infinity };
    },
    async close() {},
  };
}

/**
 * Reads through a BookCache of `capacityBytes` (0: every lookup is a point read of the engine). An
 * instant no read of the cache reaches (more than EVENTS_READ events after its snapshot, in a gap
 * longer than a gap read takes: checkpoints off, or a millisecond holding that many) is read by
 * engineBookReader.
 */
export function cachingBookReader(engine: Engine, capacityBytes: number): BookReader & { cache: BookCache } {
  const cache = new BookCache(engine, capacityBytes);
  const uncached = engineBookReader(engine);
  return {
    cache,
    async at(assetId, at, signal) {
      const instant = Math.min(at ?? MAX_TIME_MS, MAX_TIME_MS);
      const segment = (await cache.cached(assetId, instant, signal)) ?? (await cache.load(assetId, instant, signal));
      return segment ? segment.at(instant) : uncached.at(assetId, at, signal);
    },
    close: () => cache.close(),
  };
}
