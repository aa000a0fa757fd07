import type { Engine } from '../../src/clickhouse/engine.js';

/**
 * The book at T read from book_events as docs/INGEST.md §2 states it, for tests that write book_events
 * rows themselves (no ticks or book_snapshots behind them): the latest snapshot (`book` or
 * `checkpoint`) with t ≤ T, then every `price_change` after it up to T in (t, seq) order, a size of
 * 0 removing the level. Written from the spec with a plain Map, sharing nothing with src/book or
 * the reads of src/queries.
 */
export interface ReferenceBook {
  market: string;
  timestamp: number;
  bids: { price: number; size: number }[];
  asks: { price: number; size: number }[];
}

type Pair = { price: number; size: number } | [number, number];
const level = (l: Pair) => (Array.isArray(l) ? { price: l[0], size: l[1] } : { price: l.price, size: l.size });

export async function referenceBookAt(engine: Engine, assetId: string, at: number): Promise<ReferenceBook | null> {
  const params = { asset_id: assetId, at };
  const [snapshot] = await engine.rows<{ ms: number; seq: number }>(
    `SELECT toUnixTimestamp64Milli(t) AS ms, seq FROM book_events
     WHERE asset_id = {asset_id:String} AND kind != 'price_change' AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
     ORDER BY t DESC, seq DESC LIMIT 1
     SETTINGS output_format_json_quote_64bit_integers = 0`,
    { params },
  );
  // With no snapshot, every change from the asset's first event.
  const from = snapshot ?? { ms: 0, seq: 0 };
  const events = await engine.rows<{ ms: number; kind: string; market: string; price: number; size: number; side: string; bids: Pair[]; asks: Pair[] }>(
    `SELECT toUnixTimestamp64Milli(t) AS ms, toString(kind) AS kind, market, price, size, toString(book_side) AS side, bids, asks
     FROM book_events
     WHERE asset_id = {asset_id:String} AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
       AND (t > fromUnixTimestamp64Milli({ms:Int64}, 'UTC') OR (t = fromUnixTimestamp64Milli({ms:Int64}, 'UTC') AND seq >= {seq:UInt64}))
     ORDER BY t, seq
     SETTINGS output_format_json_quote_64bit_integers = 0`,
    { params: { ...params, ms: from.ms, seq: from.seq } },
  );
  if (events.length === 0) return null;
  const bids = new Map<number, number>();
  const asks = new Map<number, number>();
  let market = '';
  let timestamp = 0;
  for (const e of events) {
    if (e.kind === 'price_change') {
      const side = e.side === 'BUY' ? bids : asks;
      if (e.size === 0) side.delete(e.price);
      else side.set(e.price, e.size);
    } else {
      bids.clear();
      asks.clear();
      for (const l of e.bids.map(level)) if (l.size !== 0) bids.set(l.price, l.size);
      for (const l of e.asks.map(level)) if (l.size !== 0) asks.set(l.price, l.size);
    }
    market = e.market;
    timestamp = e.ms;
  }
  const sorted = (side: Map<number, number>, best: 1 | -1) => [...side].map(([price, size]) => ({ price, size })).sort((a, b) => best * (a.price - b.price));
  return { market, timestamp, bids: sorted(bids, -1), asks: sorted(asks, 1) };
}
