import type { Level } from '../book/index.js';

/**
 * Row shapes written to ClickHouse (see clickhouse/*.sql). Times are Unix milliseconds, except
 * `local_t`: Unix microseconds of receipt, absent when unknown (the column's DEFAULT is then `t`).
 */

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
  /** Receive time of the frame, Unix µs; absent when unknown. */
  local_t?: number;
  /** last_trade_price only: the trade's fee rate in basis points, when Polymarket sent it. */
  fee_rate_bps?: number;
  /** last_trade_price only: the trade's on-chain transaction hash, when Polymarket sent it. */
  tx_hash?: string;
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
  /** Receive time of the frame, Unix µs; absent when unknown (and on checkpoints). */
  local_t?: number;
  /** An exchange `book`'s own `tick_size` and `last_trade_price`, when it carried them. */
  tick_size?: number;
  last_trade_price?: number;
}

export type MarketEventKind = 'tick_size_change' | 'best_bid_ask' | 'market_resolved' | 'new_market';

/**
 * A market-channel event that is not a tick (clickhouse/012_market_events.sql), one row per asset it
 * concerns. Fields an event does not carry are absent (NULL / '' when stored).
 */
export interface MarketEventRow {
  asset_id: string;
  t: number;
  /** From the same arrival counter as the ticks; the rows of one event share it. */
  seq: number;
  local_t?: number;
  event: MarketEventKind;
  market: string;
  old_tick_size?: number;
  new_tick_size?: number;
  best_bid?: number;
  best_ask?: number;
  spread?: number;
  winning_asset_id?: string;
  winning_outcome?: string;
  outcome?: string;
  neg_risk?: boolean;
  fees?: FeeFields;
  /** The event object's JSON text as received. */
  raw: string;
}

/** A market's fees as its metadata or its `new_market` event states them; absent = not stated. */
export interface FeeFields {
  fees_enabled?: boolean;
  taker_base_fee?: number;
  maker_base_fee?: number;
  fee_rate?: number;
  fee_exponent?: number;
  fee_taker_only?: boolean;
  fee_rebate_rate?: number;
}

export interface MarketRow {
  asset_id: string;
  market: string;
  /** Outcome label as given by Gamma (`Yes`, `No`, `Up`, …); ticks use it upper-cased. */
  outcome: string;
  question: string;
  slug: string;
  /** Gamma's `orderMinSize` (shares); absent when unknown. */
  min_order_size?: number;
  /** Gamma's `orderPriceMinTickSize`; absent when unknown. */
  tick_size?: number;
  /** Gamma's `negRisk`; absent when unknown. */
  neg_risk?: boolean;
  /** Gamma's `feesEnabled`, `takerBaseFee`, `makerBaseFee` and `feeSchedule`; absent when unknown. */
  fees?: FeeFields;
  /** Version for ReplacingMergeTree: the newest row per asset wins. */
  updated_at: number;
}

/** Polymarket's protocol of a market (Gamma's `version`): v1 = CTF outcome tokens, v2 = Protocol V2 positions. */
export type ProtocolVersion = 'v1' | 'v2';

/**
 * The protocol version Gamma states for a token's market (market_protocols, migration 050), versioned
 * by Gamma's `updatedAt` like MarketRow.
 */
export interface ProtocolRow {
  asset_id: string;
  market: string;
  protocol_version: ProtocolVersion;
  updated_at: number;
}

/**
 * The drift check of one exchange `book` (docs/TIME-MACHINE.md §4): `unchecked` when the ingest run had
 * no book of the asset before it, else the book rebuilt from the events before it compared with it.
 */
export interface BookCheckRow {
  asset_id: string;
  /** The `book` event's time and seq (those of its tick). */
  t: number;
  seq: number;
  verdict: 'unchecked' | 'verified' | 'drifted';
  /** Price levels whose size differs (absent = 0); 0 unless drifted. */
  levels_differing: number;
}

export type CaptureKind = 'start' | 'stop' | 'subscribe' | 'open' | 'close' | 'resync' | 'source_missing' | 'unsubscribe';

/**
 * One lifecycle record of a recorder run (docs/TIME-MACHINE.md §4), per asset it concerns:
 * - `start` / `stop` (asset_id ''): the run began / ended;
 * - `subscribe`: the run added the asset to socket `socket`;
 * - `open`: the asset is live on the socket (connected and subscribed, or subscribed on an open socket);
 * - `close`: the socket's connection was lost (the run reconnects it);
 * - `resync`: the first exchange `book` of the asset after an `open` arrived on the socket;
 * - `source_missing` (asset_id ''): an imported archive has no file from here to the next `start` or
 *   this run's `stop` (docs/INGEST.md §6).
 * Times are the recorder's wall clock (receipt), not exchange time.
 */
export interface CaptureRow {
  asset_id: string;
  t: number;
  /** Arrival order among records and ticks of the same ingest (the normalizer's seq). */
  seq: number;
  run: string;
  /** 1-based socket number within the run; 0 for run records. */
  socket: number;
  kind: CaptureKind;
}
