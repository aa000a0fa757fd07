import type { BookState } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import { BookCache } from './book-cache.js';
import { bookStateAt, MAX_TIME_MS } from './orderbook.js';

/**
 * Where every point-in-time book is read from: `/v1/orderbook`, `/v1/price`, `/v1/execution-price`,
 * the Polymarket-compatible endpoints and the replay's initial books. One interface, so a cache of
 * immutable history can stand in front of the engine without the readers knowing.
 */
export interface BookReader {
  /** The book at `at` (Unix ms; null = latest), or null when the asset has no book then. */
  at(assetId: string, at: number | null, signal?: AbortSignal): Promise<BookAt | null>;
  /** Stops background work (a cache's fill) and waits for it: before the engine closes. */
  close(): Promise<void>;
}

/**
 * A book read at an instant, and the time of the first stored event after that instant (Infinity
 * when none is known): when there is one, the instant lies before the asset's ingest watermark and
 * its book is history, which only data arriving late can change.
 */
export interface BookAt extends BookState {
  next: number;
}

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
 * Reads through a BookCache of `capacityBytes` (0: every read goes to the engine, the same way).
 * An instant no read of the cache reaches (more than SEGMENTS_READ events after its snapshot:
 * checkpoints off, or a millisecond holding that many) is read by engineBookReader.
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
