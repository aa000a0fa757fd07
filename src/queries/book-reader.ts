import type { BookState } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import { bookStateAt } from './orderbook.js';

/**
 * Where every point-in-time book is read from: `/v1/orderbook`, `/v1/price`, `/v1/execution-price`,
 * the Polymarket-compatible endpoints and the replay's initial books. One interface, so a cache of
 * immutable history can stand in front of the engine without the readers knowing.
 */
export interface BookReader {
  /** The book at `at` (Unix ms; null = latest), or null when the asset has no book then. */
  at(assetId: string, at: number | null, signal?: AbortSignal): Promise<BookState | null>;
}

/** Every read goes to the engine. */
export function engineBookReader(engine: Engine): BookReader {
  return { at: (assetId, at, signal) => bookStateAt(engine, assetId, at, signal) };
}
