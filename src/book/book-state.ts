import type { OrderBook } from './order-book.js';

/** An asset's book at one instant, as reconstructed from stored events (docs/INGEST.md §2). */
export interface BookState {
  /** Condition id of the market the last event applied belongs to. */
  market: string;
  /** Unix ms of the last event applied. */
  timestamp: number;
  book: OrderBook;
}
