/**
 * A seeded stream of raw Polymarket market-channel frames for order book tests: several assets, every
 * event kind and all three `price_change` generations, level removals, sides that run empty, and many
 * equal timestamps. Books are never crossed (the exchange matches crossing orders), timestamps never
 * go back, and current-generation items carry the exchange's best bid/ask after the change.
 */

export interface FrameStream {
  lines: string[];
  /** Assets with a book at some point. */
  assets: string[];
  /** An asset that only ever trades: it must never get a book. */
  tradeOnlyAsset: string;
  /** First and last event time of the stream. */
  start: number;
  end: number;
}

const MARKETS = ['0xaaa1', '0xbbb2', '0xccc3'];

export function generateFrames(seed: number, frames: number, start = 1_766_000_000_000): FrameStream {
  let state = seed >>> 0 || 1;
  const rand = () => {
    // xorshift32: deterministic, good enough for test data.
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 2 ** 32;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];

  const assets = ['1001', '1002', '2001', '3001'];
  const tradeOnlyAsset = '9009';
  const marketOf: Record<string, string> = { '1001': MARKETS[0], '1002': MARKETS[0], '2001': MARKETS[1], '3001': MARKETS[2], '9009': MARKETS[2] };
  // Asset 3001 gets no `book` until late: its book starts from price_change alone.
  const books = new Map<string, { bids: Map<number, number>; asks: Map<number, number> }>();
  const bookOf = (a: string) => {
    let b = books.get(a);
    if (!b) books.set(a, (b = { bids: new Map(), asks: new Map() }));
    return b;
  };
  const best = (a: string) => {
    const b = bookOf(a);
    return { bid: b.bids.size ? Math.max(...b.bids.keys()) : 0, ask: b.asks.size ? Math.min(...b.asks.keys()) : 1 };
  };
  const price = (cents: number) => String(cents / 100);
  const size = () => String(int(1, 50000) / 100);
  const levelsJson = (m: Map<number, number>, ascending: boolean) =>
    [...m].sort((x, y) => (ascending ? x[0] - y[0] : y[0] - x[0])).map(([p, s]) => ({ price: String(p), size: String(s) }));

  let t = start;
  const lines: string[] = [];

  /** A fresh random book, uncrossed, with a chance of an empty side. */
  const newBook = (a: string) => {
    const b = bookOf(a);
    b.bids.clear();
    b.asks.clear();
    const mid = int(20, 80);
    const emptyBids = rand() < 0.1;
    const emptyAsks = !emptyBids && rand() < 0.1;
    if (!emptyBids) for (let i = 0; i < int(1, 25); i++) b.bids.set(Number(price(int(1, mid))), Number(size()));
    if (!emptyAsks) for (let i = 0; i < int(1, 25); i++) b.asks.set(Number(price(int(mid + 1, 99))), Number(size()));
    // Real captures list bids ascending and asks descending; the order must not matter.
    return {
      event_type: 'book',
      asset_id: a,
      market: marketOf[a],
      timestamp: String(t),
      hash: 'h',
      bids: levelsJson(b.bids, true),
      asks: levelsJson(b.asks, false),
    };
  };

  /** One change to the asset's book that keeps it uncrossed; removals of existing levels are frequent. */
  const change = (a: string) => {
    const b = bookOf(a);
    const { bid, ask } = best(a);
    const isBid = rand() < 0.5;
    const side = isBid ? b.bids : b.asks;
    let p: number;
    let s: number;
    if (side.size > 0 && rand() < 0.35) {
      p = pick([...side.keys()]);
      s = 0;
    } else {
      // Bids stay ≤ 0.98 and asks ≥ 0.02 so the other side always has room.
      const cents = isBid ? int(1, Math.min(Math.round(ask * 100) - 1, 98)) : int(Math.max(Math.round(bid * 100) + 1, 2), 99);
      p = Number(price(cents));
      s = rand() < 0.05 ? 0 : Number(size());
    }
    if (s === 0) side.delete(p);
    else side.set(p, s);
    const after = best(a);
    return {
      asset_id: a,
      price: String(p),
      size: String(s),
      side: isBid ? 'BUY' : 'SELL',
      hash: 'h',
      best_bid: String(after.bid),
      best_ask: String(after.ask),
    };
  };

  // The initial dump: an array of books (3001 has none yet).
  lines.push(JSON.stringify(assets.filter((a) => a !== '3001').map(newBook)));
  let bookFor3001 = false;
  for (let i = 0; i < frames; i++) {
    // Equal timestamps are common: the clock often stands still between frames.
    if (rand() < 0.6) t += int(1, 2000);
    const a = pick(assets);
    const r = rand();
    if (r < 0.04 && (a !== '3001' || i > frames / 2)) {
      if (a === '3001') bookFor3001 = true;
      lines.push(JSON.stringify(newBook(a)));
    } else if (r < 0.5) {
      // Current generation; items may span both assets of a market.
      const items = [change(a)];
      for (let k = int(0, 3); k > 0; k--) items.push(change(a === '1001' ? pick(['1001', '1002']) : a));
      lines.push(JSON.stringify({ market: marketOf[a], price_changes: items, timestamp: String(t), event_type: 'price_change' }));
    } else if (r < 0.62) {
      const items = [change(a), change(a)].map(({ price: p, side, size: s }) => ({ price: p, side, size: s }));
      lines.push(JSON.stringify({ asset_id: a, market: marketOf[a], timestamp: String(t), hash: 'h', event_type: 'price_change', changes: items }));
    } else if (r < 0.7) {
      const { price: p, side, size: s } = change(a);
      lines.push(JSON.stringify({ asset_id: a, market: marketOf[a], timestamp: String(t), hash: 'h', event_type: 'price_change', price: p, side, size: s }));
    } else if (r < 0.75) {
      // Empty one side of the book level by level.
      const b = bookOf(a);
      const isBid = rand() < 0.5;
      const side = isBid ? b.bids : b.asks;
      const items = [...side.keys()].map((p) => {
        side.delete(p);
        const after = best(a);
        return { asset_id: a, price: String(p), size: '0', side: isBid ? 'BUY' : 'SELL', hash: 'h', best_bid: String(after.bid), best_ask: String(after.ask) };
      });
      if (items.length) lines.push(JSON.stringify({ market: marketOf[a], price_changes: items, timestamp: String(t), event_type: 'price_change' }));
    } else if (r < 0.85) {
      const trader = rand() < 0.3 ? tradeOnlyAsset : a;
      lines.push(
        JSON.stringify({
          asset_id: trader,
          market: marketOf[trader],
          price: price(int(1, 99)),
          side: pick(['BUY', 'SELL']),
          size: size(),
          fee_rate_bps: '0',
          timestamp: String(t),
          event_type: 'last_trade_price',
        }),
      );
    } else if (r < 0.88) {
      lines.push(
        JSON.stringify({ event_type: 'best_bid_ask', market: marketOf[a], asset_id: a, best_bid: '0.4', best_ask: '0.6', spread: '0.2', timestamp: String(t) }),
      );
    } else if (r < 0.9) {
      lines.push(
        JSON.stringify({
          event_type: 'tick_size_change',
          asset_id: a,
          market: marketOf[a],
          old_tick_size: '0.01',
          new_tick_size: '0.001',
          timestamp: String(t),
        }),
      );
    } else if (r < 0.91) {
      lines.push(JSON.stringify({ event_type: 'mystery_event', asset_id: a, timestamp: String(t) }));
    } else if (r < 0.92) {
      lines.push('PONG');
    } else {
      lines.push(JSON.stringify({ market: marketOf[a], price_changes: [change(a)], timestamp: String(t), event_type: 'price_change' }));
    }
  }
  if (!bookFor3001) lines.push(JSON.stringify(newBook('3001')));
  return { lines, assets, tradeOnlyAsset, start, end: t };
}
