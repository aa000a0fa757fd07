import type { BookState } from '../book/index.js';

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
