import type { Engine } from '../clickhouse/engine.js';
import { MAX_TIME_MS } from './orderbook.js';

/**
 * The summary of one asset's ticks in [start, end] (docs/MCP.md §3, tool `get_tick_summary`): counts
 * per event, the first and last tick, and the trades' volume, notional and VWAP, from four reads of
 * the asset's primary-key range; a few numbers come back, whatever the range holds.
 */

/** A tick as `/v1/ticks` lists it (docs/API.md §4). */
export interface SummaryTick {
  t: number;
  event: 'price_change' | 'book' | 'last_trade_price';
  side: string;
  best_bid: number;
  best_ask: number;
  price: number;
  size: number;
}

export interface TickSummary {
  asset_id: string;
  start: number;
  end: number;
  ticks: number;
  events: { price_change: number; book: number; last_trade_price: number };
  first: SummaryTick | null;
  last: SummaryTick | null;
  trades: {
    count: number;
    /** Shares traded. */
    volume: number;
    /** Σ price × size (USDC), rounded to 6 decimals. */
    notional: number;
    /** notional / volume, rounded to 6 decimals; null without trades. */
    vwap: number | null;
    low: number | null;
    high: number | null;
  };
}

const RANGE = `k.asset_id = {asset_id:String}
  AND k.t >= fromUnixTimestamp64Milli({start:Int64}, 'UTC') AND k.t <= fromUnixTimestamp64Milli({end:Int64}, 'UTC')`;

/** Ticks per event: reads only the key and `event`. */
const COUNTS_SQL = `SELECT toString(k.event) AS event, count() AS n FROM ticks AS k WHERE ${RANGE} GROUP BY k.event`;

/**
 * The trades' sums. Prices and sizes have 6 decimals (docs/INGEST.md §2): the sums run on integer
 * micro-units in Int128, so the notional and VWAP are exact whatever the order of the rows, and leave
 * as text (an Int128 may not fit a JSON number). PREWHERE reads price and size only where `event`
 * says trade.
 */
const TRADES_SQL = `SELECT count() AS n,
  toString(sum(toInt128(round(k.size * 1000000)))) AS volume_micro,
  toString(sum(toInt128(round(k.price * 1000000)) * toInt128(round(k.size * 1000000)))) AS notional_pico,
  min(k.price) AS low, max(k.price) AS high
FROM ticks AS k PREWHERE k.event = 'last_trade_price' WHERE ${RANGE}`;

/** The first or last tick: a read of the key range in order (or in reverse) that stops at one row. */
const edgeSql = (order: 'ASC' | 'DESC') => `SELECT toUnixTimestamp64Milli(k.t) AS t, toString(k.event) AS event, k.side AS side,
  k.best_bid AS best_bid, k.best_ask AS best_ask, k.price AS price, k.size AS size
FROM ticks AS k WHERE ${RANGE}
ORDER BY k.t ${order}, k.seq ${order}
LIMIT 1`;

interface TradeRow {
  n: number;
  volume_micro: string;
  notional_pico: string;
  low: number;
  high: number;
}

/** Four reads at once (counts, trades, first, last): each touches only the columns it needs. */
export async function tickSummary(engine: Engine, q: { asset_id: string; start: number; end: number }, signal?: AbortSignal): Promise<TickSummary> {
  const params = { asset_id: q.asset_id, start: Math.min(q.start, MAX_TIME_MS), end: Math.min(q.end, MAX_TIME_MS) };
  const [counts, [trade], [first], [last]] = await Promise.all([
    engine.rows<{ event: SummaryTick['event']; n: number }>(COUNTS_SQL, { params, signal }),
    engine.rows<TradeRow>(TRADES_SQL, { params, signal }),
    engine.rows<SummaryTick>(edgeSql('ASC'), { params, signal }),
    engine.rows<SummaryTick>(edgeSql('DESC'), { params, signal }),
  ]);
  const events = { price_change: 0, book: 0, last_trade_price: 0 };
  for (const { event, n } of counts) events[event] = Number(n);
  const trades = Number(trade.n);
  const volume = BigInt(trade.volume_micro);
  const notional = BigInt(trade.notional_pico);
  return {
    asset_id: q.asset_id,
    start: q.start,
    end: q.end,
    ticks: events.price_change + events.book + events.last_trade_price,
    events,
    first: first ? tickOf(first) : null,
    last: last ? tickOf(last) : null,
    trades: {
      count: trades,
      volume: micro(volume),
      notional: micro(roundedQuotient(notional, 1_000_000n)),
      vwap: volume > 0n ? micro(roundedQuotient(notional, volume)) : null,
      low: trades ? trade.low : null,
      high: trades ? trade.high : null,
    },
  };
}

function tickOf({ t, event, side, best_bid, best_ask, price, size }: SummaryTick): SummaryTick {
  return { t: Number(t), event, side, best_bid, best_ask, price, size };
}

/** a / b rounded half up (both ≥ 0, b > 0). */
function roundedQuotient(a: bigint, b: bigint): bigint {
  return (2n * a + b) / (2n * b);
}

/** Micro-units as the nearest number (n / 10⁶ divides exact integers: the nearest double to the 6-decimal value). */
function micro(n: bigint): number {
  return Number(n) / 1_000_000;
}
