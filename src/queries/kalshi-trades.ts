import type { Engine } from '../clickhouse/engine.js';

/**
 * The trades of one Kalshi market for Kalshi's `GET /markets/trades` twin (docs/KALSHI.md §5): its
 * `last_trade_price` ticks in [from, to], newest first, i.e. (t, seq) descending — the reverse of the
 * table's key, so one range read. `after` continues a page: only the rows strictly before that
 * (t, seq) in this order. (asset_id, t, seq) is unique, so pages neither repeat nor skip a trade, equal
 * milliseconds included. The table is aliased and qualified so the output alias `t` (ms) never shadows the column.
 */
const TRADES_SQL = (after: boolean) => `
SELECT toUnixTimestamp64Milli(k.t) AS t, k.seq AS seq, k.price AS price, k.size AS size, toString(k.book_side) AS side, k.tx_hash AS id
FROM ticks AS k
WHERE k.asset_id = {asset_id:String} AND k.event = 'last_trade_price'
  AND k.t >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')
  AND k.t <= fromUnixTimestamp64Milli({to:Int64}, 'UTC')${
    after
      ? `
  AND (k.t < fromUnixTimestamp64Milli({after_t:Int64}, 'UTC')
    OR (k.t = fromUnixTimestamp64Milli({after_t:Int64}, 'UTC') AND k.seq < {after_seq:UInt64}))`
      : ''
  }
ORDER BY k.t DESC, k.seq DESC
LIMIT {limit:UInt32}`;

export interface StoredTrade {
  /** Exchange time, Unix ms. */
  t: number;
  /** Arrival order among the market's rows of one ms. */
  seq: number;
  /** The YES price as stored (1/10,000 dollar as the nearest Float64). */
  price: number;
  /** Contracts (1/100 contract as the nearest Float64). */
  size: number;
  /** The taker side: BUY = yes, SELL = no. */
  side: 'BUY' | 'SELL' | '';
  /** Kalshi's trade_id ('' for a trade stored without one). */
  id: string;
}

export interface TradeQuery {
  assetId: string;
  /** Unix ms, inclusive. */
  from: number;
  /** Unix ms, inclusive. */
  to: number;
  /** Continue after this trade (exclusive), in newest-first order. */
  after?: { t: number; seq: number };
  limit: number;
}

export async function kalshiTrades(engine: Engine, q: TradeQuery, signal?: AbortSignal): Promise<StoredTrade[]> {
  if (q.from > q.to) return [];
  const params: Record<string, unknown> = { asset_id: q.assetId, from: q.from, to: q.to, limit: q.limit };
  if (q.after) {
    params.after_t = q.after.t;
    params.after_seq = q.after.seq;
  }
  return engine.rows<StoredTrade>(TRADES_SQL(q.after !== undefined), { params, signal });
}
