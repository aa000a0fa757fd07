import type { FeeFields } from '../clickhouse/rows.js';

/**
 * What stored history says of an instrument as of an instant (read by src/queries/instruments.ts), and
 * what the `markets` metadata says of it: the inputs of instrumentAt (instrument.ts).
 */

/** A value as of an instant, and the (t, seq) of the row that set it: the newest of several sources wins. */
export interface Stated<T> {
  t: number;
  seq: number;
  value: T;
}

export interface TradingHistory {
  /**
   * Newest tick size: a tick_size_change's new tick, a new_market's opening tick or an exchange book's
   * `tick_size`; when none is stored up to the instant, the old tick of the first tick_size_change after it.
   */
  tickSize: Stated<number> | null;
  /** Newest last trade price: a last_trade_price tick (with its taker side) or an exchange book's `last_trade_price`. */
  lastTrade: Stated<number> | null;
  /** Newest neg-risk flag a new_market stated. */
  negRisk: Stated<boolean> | null;
}

/** Of two stated values, the one set last in (t, seq) order. */
export function newer<T>(a: Stated<T> | null, b: Stated<T> | null): Stated<T> | null {
  if (!a || !b) return a ?? b;
  return b.t > a.t || (b.t === a.t && b.seq > a.seq) ? b : a;
}

/** The newest new_market of an asset at or before an instant: what it stated about this asset. */
export interface ListingEvent {
  t: number;
  market: string;
  outcome: string;
  question: string;
  fees: FeeFields;
}

/** A market_resolved: the winner (same on every asset's row) and when. */
export interface Resolution {
  t: number;
  winning_asset_id: string;
  winning_outcome: string;
}

export interface ListingHistory {
  /** The asset's market as its stored ticks name it ('' when it has none). */
  market: string;
  listing: ListingEvent | null;
  /** The newest resolution at or before the instant. */
  resolved: Resolution | null;
  /** The first resolution after it: the market was open at the instant. */
  resolvedLater: Resolution | null;
}
