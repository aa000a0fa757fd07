/**
 * One asset's L2 order book: the one implementation every part of tickhouse builds and reads books
 * with (ingest, reconstruction, range samples, exports, replay, execution).
 *
 * Each side is kept as an array sorted best first (bids by price descending, asks ascending), so the
 * top of book is the first element, a depth cut is a slice, and a book loaded from a stored snapshot
 * (stored sorted) is never sorted again. A change finds its level by binary search; books hold tens
 * to a few hundred levels, where moving array elements costs less than keeping a tree.
 */

/** One price level: `size` shares rest at `price`. */
export interface Level {
  price: number;
  size: number;
}

export type BookSide = 'bid' | 'ask';

/** Best bid of a book without bids, and best ask of a book without asks (docs/API.md: 0 and 1). */
export const EMPTY_BID = 0;
export const EMPTY_ASK = 1;

/** The book side a Polymarket `price_change` sets: `BUY` = bids, `SELL` = asks (docs/INGEST.md §1). */
export function sideOfOrder(orderSide: 'BUY' | 'SELL'): BookSide {
  return orderSide === 'BUY' ? 'bid' : 'ask';
}

export class OrderBook {
  private bids: Level[] = [];
  private asks: Level[] = [];

  /** A book holding these levels (any order; size 0 and repeated prices as `replace` says). */
  static of(bids: readonly Level[], asks: readonly Level[]): OrderBook {
    const book = new OrderBook();
    book.replace(bids, asks);
    return book;
  }

  /**
   * Replaces the whole book (an exchange `book` event, a snapshot). Levels may come in any order;
   * input already sorted best first (stored snapshots) is taken as it is. Size-0 levels are dropped;
   * of repeated prices the last one listed wins, as if applied in order.
   */
  replace(bids: readonly Level[], asks: readonly Level[]): void {
    this.bids = normalized(bids, 'bid');
    this.asks = normalized(asks, 'ask');
  }

  /** Sets the total size resting at one level; size 0 removes the level. */
  apply(side: BookSide, price: number, size: number): void {
    const levels = side === 'bid' ? this.bids : this.asks;
    const i = search(levels, price, side);
    const found = i < levels.length && levels[i].price === price;
    // Replaced, never mutated: level objects handed out by levels() stay as they were.
    if (size > 0) {
      if (found) levels[i] = { price, size };
      else levels.splice(i, 0, { price, size });
    } else if (found) {
      levels.splice(i, 1);
    }
  }

  /** Highest bid, EMPTY_BID (0) when there are no bids. */
  bestBid(): number {
    return this.bids.length ? this.bids[0].price : EMPTY_BID;
  }

  /** Lowest ask, EMPTY_ASK (1) when there are no asks. */
  bestAsk(): number {
    return this.asks.length ? this.asks[0].price : EMPTY_ASK;
  }

  /** The first `depth` levels of a side, best first (bids descending, asks ascending); a copy. */
  levels(side: BookSide, depth = Infinity): Level[] {
    const levels = side === 'bid' ? this.bids : this.asks;
    return depth >= levels.length ? levels.slice() : levels.slice(0, depth);
  }

  /**
   * A side's levels, best first, without a copy: for loops that read the book after every event of a
   * fold (exports). Read-only, and valid only until the book next changes.
   */
  side(side: BookSide): readonly Level[] {
    return side === 'bid' ? this.bids : this.asks;
  }

  /** Size resting at `price` on a side, 0 when there is no such level. */
  sizeAt(side: BookSide, price: number): number {
    const levels = side === 'bid' ? this.bids : this.asks;
    const i = search(levels, price, side);
    return i < levels.length && levels[i].price === price ? levels[i].size : 0;
  }

  /** Number of levels on a side. */
  count(side: BookSide): number {
    return (side === 'bid' ? this.bids : this.asks).length;
  }

  clone(): OrderBook {
    const copy = new OrderBook();
    copy.bids = this.bids.slice();
    copy.asks = this.asks.slice();
    return copy;
  }
}

/** True when `a` is a better price than `b` on that side. */
const better = (side: BookSide, a: number, b: number) => (side === 'bid' ? a > b : a < b);

/** Index of the first level whose price is not better than `price`: where `price` is or would go. */
function search(levels: readonly Level[], price: number, side: BookSide): number {
  let lo = 0;
  let hi = levels.length;
  // One loop per side: the side is decided once, not at every step (this runs per change in every fold,
  // so it is not src/partition-point.ts: a predicate call per step would cost more than the search).
  if (side === 'bid') {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (levels[mid].price > price) lo = mid + 1;
      else hi = mid;
    }
  } else {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (levels[mid].price < price) lo = mid + 1;
      else hi = mid;
    }
  }
  return lo;
}

function normalized(input: readonly Level[], side: BookSide): Level[] {
  let sorted = true;
  for (let i = 0; i < input.length; i++) {
    if (!(input[i].size > 0) || (i > 0 && !better(side, input[i - 1].price, input[i].price))) {
      sorted = false;
      break;
    }
  }
  if (sorted) return input.map(({ price, size }) => ({ price, size }));
  // Applying the levels in the order listed gives the replace semantics (last repeat wins, 0 drops).
  const out: Level[] = [];
  const byPrice = new Map<number, number>();
  for (const { price, size } of input) byPrice.set(price, size);
  for (const [price, size] of byPrice) if (size > 0) out.push({ price, size });
  return out.sort((a, b) => (side === 'bid' ? b.price - a.price : a.price - b.price));
}
