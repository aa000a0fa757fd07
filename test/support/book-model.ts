/**
 * The reference for order book tests: raw Polymarket frames in, the book at any T out, computed the
 * plain way (keep every book-changing event, replay those with t ≤ T in (t, arrival) order). It
 * shares no code with src/ so a mistake there cannot hide here.
 */

export interface ModelLevel {
  price: number;
  size: number;
}

export interface ModelBook {
  market: string;
  timestamp: number;
  bids: ModelLevel[];
  asks: ModelLevel[];
  best_bid: number;
  best_ask: number;
}

type ModelEvent =
  | { kind: 'book'; t: number; order: number; market: string; bids: ModelLevel[]; asks: ModelLevel[] }
  | { kind: 'change'; t: number; order: number; market: string; bid: boolean; price: number; size: number };

export class BookModel {
  private readonly events = new Map<string, ModelEvent[]>();
  /** Times of every event that yields a tick (trades included), per asset, in arrival order. */
  private readonly ticks = new Map<string, number[]>();
  private readonly exchangeBooks = new Map<string, number[]>();
  private order = 0;

  push(line: string): void {
    const text = line.trim();
    if (text === '' || text === 'PONG') return;
    const frame: unknown = JSON.parse(text);
    for (const e of Array.isArray(frame) ? frame : [frame]) this.event(e as Record<string, unknown>);
  }

  /** Every asset that has a book-changing event. */
  assets(): string[] {
    return [...this.events.keys()];
  }

  /** Times of the asset's book-changing events, ascending. */
  times(asset: string): number[] {
    return (this.events.get(asset) ?? []).map((e) => e.t).sort((a, b) => a - b);
  }

  /** Times of the asset's ticks (book, price_change item, last_trade_price), ascending. */
  tickTimes(asset: string): number[] {
    return [...(this.ticks.get(asset) ?? [])].sort((a, b) => a - b);
  }

  /** Times of the asset's `book` events, ascending. */
  bookEventTimes(asset: string): number[] {
    return [...(this.exchangeBooks.get(asset) ?? [])].sort((a, b) => a - b);
  }

  /** The book after every book-changing event of `asset` with t ≤ `at`, or null when there is none. */
  bookAt(asset: string, at: number): ModelBook | null {
    const applied = (this.events.get(asset) ?? []).filter((e) => e.t <= at).sort((a, b) => a.t - b.t || a.order - b.order);
    if (applied.length === 0) return null;
    let bids = new Map<number, number>();
    let asks = new Map<number, number>();
    for (const e of applied) {
      if (e.kind === 'book') {
        bids = new Map(e.bids.filter((l) => l.size > 0).map((l) => [l.price, l.size]));
        asks = new Map(e.asks.filter((l) => l.size > 0).map((l) => [l.price, l.size]));
      } else {
        const side = e.bid ? bids : asks;
        if (e.size === 0) side.delete(e.price);
        else side.set(e.price, e.size);
      }
    }
    const last = applied[applied.length - 1];
    const sortedBids = [...bids].map(([price, size]) => ({ price, size })).sort((a, b) => b.price - a.price);
    const sortedAsks = [...asks].map(([price, size]) => ({ price, size })).sort((a, b) => a.price - b.price);
    return {
      market: last.market,
      timestamp: last.t,
      bids: sortedBids,
      asks: sortedAsks,
      best_bid: sortedBids.length ? sortedBids[0].price : 0,
      best_ask: sortedAsks.length ? sortedAsks[0].price : 1,
    };
  }

  private event(e: Record<string, unknown>): void {
    const t = Number(e.timestamp);
    const market = String(e.market ?? '');
    if (e.event_type === 'book') {
      const levels = (v: unknown) => (v as { price: string; size: string }[]).map((l) => ({ price: Number(l.price), size: Number(l.size) }));
      this.add(String(e.asset_id), { kind: 'book', t, order: this.order++, market, bids: levels(e.bids), asks: levels(e.asks) });
      append(this.exchangeBooks, String(e.asset_id), t);
    } else if (e.event_type === 'price_change') {
      const items = (e.price_changes ?? e.changes ?? [e]) as Record<string, unknown>[];
      for (const item of items) {
        const asset = String(item.asset_id ?? e.asset_id);
        this.add(asset, { kind: 'change', t, order: this.order++, market, bid: item.side === 'BUY', price: Number(item.price), size: Number(item.size) });
      }
    } else if (e.event_type === 'last_trade_price') {
      append(this.ticks, String(e.asset_id), t);
    }
  }

  private add(asset: string, e: ModelEvent): void {
    append(this.events, asset, e);
    append(this.ticks, asset, e.t);
  }
}

function append<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** docs/API.md rounding: prices to 6 decimals, bps to 2. */
const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

/** `/v1/execution-price` `data` for a market order of `amount` shares against `book`, walked level by level. */
export function modelExecution(book: ModelBook, side: 'BUY' | 'SELL', amount: number) {
  const levels = side === 'BUY' ? book.asks : book.bids;
  if (levels.length === 0) {
    return {
      side,
      requested_amount: amount,
      filled_amount: 0,
      average_price: null,
      best_price: null,
      slippage: null,
      slippage_bps: null,
      fully_filled: false,
      fills: [],
    };
  }
  const fills: ModelLevel[] = [];
  let filled = 0;
  let cost = 0;
  let full = false;
  for (const level of levels) {
    const take = filled + level.size >= amount ? amount - filled : level.size;
    fills.push({ price: level.price, size: take });
    cost += level.price * take;
    if (filled + level.size >= amount) {
      filled = amount;
      full = true;
      break;
    }
    filled += level.size;
  }
  const average = cost / filled;
  const best = levels[0].price;
  const slippage = Math.abs(average - best);
  return {
    side,
    requested_amount: amount,
    filled_amount: full ? amount : round(filled, 6),
    average_price: round(average, 6),
    best_price: round(best, 6),
    slippage: round(slippage, 6),
    slippage_bps: best > 0 ? round((slippage / best) * 1e4, 2) : 0,
    fully_filled: full,
    fills: fills.slice(0, 10).map((f) => ({ price: round(f.price, 6), size: round(f.size, 6) })),
  };
}
