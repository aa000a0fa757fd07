import type { Engine } from '../clickhouse/engine.js';
import { MAX_TIME_MS } from './orderbook.js';

/**
 * The summary of one asset's ticks in [start, end] (docs/MCP.md §3, tool `get_tick_summary`): counts
 * per event, the first and last tick, and the trades' volume, notional and VWAP. One read of the
 * asset's primary-key range; a few numbers come back, whatever the range holds.
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

/**
 * Prices and sizes have 6 decimals (docs/INGEST.md §2): sums run on integer micro-units in Int128, so
 * the notional and VWAP are exact whatever the order of the rows, and leave as text (an Int128 may not
 * fit a JSON number).
 */
const SUMMARY_SQL = `
SELECT count() AS ticks,
  countIf(k.event = 'price_change') AS price_change,
  countIf(k.event = 'book') AS book,
  countIf(k.event = 'last_trade_price') AS trades,
  argMin((toUnixTimestamp64Milli(k.t), toString(k.event), k.side, k.best_bid, k.best_ask, k.price, k.size), (k.t, k.seq)) AS first,
  argMax((toUnixTimestamp64Milli(k.t), toString(k.event), k.side, k.best_bid, k.best_ask, k.price, k.size), (k.t, k.seq)) AS last,
  toString(sumIf(toInt128(round(k.size * 1000000)), k.event = 'last_trade_price')) AS volume_micro,
  toString(sumIf(toInt128(round(k.price * 1000000)) * toInt128(round(k.size * 1000000)), k.event = 'last_trade_price')) AS notional_pico,
  minIf(k.price, k.event = 'last_trade_price') AS low,
  maxIf(k.price, k.event = 'last_trade_price') AS high
FROM ticks AS k
WHERE k.asset_id = {asset_id:String}
  AND k.t >= fromUnixTimestamp64Milli({start:Int64}, 'UTC') AND k.t <= fromUnixTimestamp64Milli({end:Int64}, 'UTC')`;

type TickTuple = [t: number, event: SummaryTick['event'], side: string, best_bid: number, best_ask: number, price: number, size: number];

interface SummaryRow {
  ticks: number;
  price_change: number;
  book: number;
  trades: number;
  first: TickTuple;
  last: TickTuple;
  volume_micro: string;
  notional_pico: string;
  low: number;
  high: number;
}

export async function tickSummary(engine: Engine, q: { asset_id: string; start: number; end: number }, signal?: AbortSignal): Promise<TickSummary> {
  const params = { asset_id: q.asset_id, start: Math.min(q.start, MAX_TIME_MS), end: Math.min(q.end, MAX_TIME_MS) };
  const [row] = await engine.rows<SummaryRow>(SUMMARY_SQL, { params, signal });
  const ticks = Number(row.ticks);
  const trades = Number(row.trades);
  const volume = BigInt(row.volume_micro);
  const notional = BigInt(row.notional_pico);
  return {
    asset_id: q.asset_id,
    start: q.start,
    end: q.end,
    ticks,
    events: { price_change: Number(row.price_change), book: Number(row.book), last_trade_price: trades },
    first: ticks ? tickOf(row.first) : null,
    last: ticks ? tickOf(row.last) : null,
    trades: {
      count: trades,
      volume: micro(volume),
      notional: micro(roundedQuotient(notional, 1_000_000n)),
      vwap: volume > 0n ? micro(roundedQuotient(notional, volume)) : null,
      low: trades ? row.low : null,
      high: trades ? row.high : null,
    },
  };
}

function tickOf([t, event, side, best_bid, best_ask, price, size]: TickTuple): SummaryTick {
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
