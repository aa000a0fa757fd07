import type { Level } from '../book/index.js';

/** Row shapes written to ClickHouse (see clickhouse/*.sql). Times are Unix milliseconds. */

export type TickEvent = 'price_change' | 'book' | 'last_trade_price';

export interface TickRow {
  asset_id: string;
  t: number;
  /** Arrival order among rows of one asset with equal `t`; unique per (asset_id, t). < 2^53. */
  seq: number;
  event: TickEvent;
  side: string;
  best_bid: number;
  best_ask: number;
  price: number;
  size: number;
  /**
   * price_change: the book side it set (BUY = bids, SELL = asks). last_trade_price: the taker side
   * Polymarket sent (rows ingested before it was kept have ''). book: ''.
   */
  book_side: '' | 'BUY' | 'SELL';
  market: string;
}

export interface SnapshotRow {
  asset_id: string;
  /** Time of the last event the snapshot includes. */
  t: number;
  /** seq of that event, so (t, seq) orders snapshots among ticks. */
  seq: number;
  /** 0 = a `book` event sent by the exchange, 1 = the ingester's own checkpoint. */
  is_checkpoint: 0 | 1;
  market: string;
  /** Sorted by price descending. */
  bids: Level[];
  /** Sorted by price ascending. */
  asks: Level[];
}

export interface MarketRow {
  asset_id: string;
  market: string;
  /** Outcome label as given by Gamma (`Yes`, `No`, `Up`, …); ticks use it upper-cased. */
  outcome: string;
  question: string;
  slug: string;
  /** Version for ReplacingMergeTree: the newest row per asset wins. */
  updated_at: number;
}
