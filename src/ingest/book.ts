import type { Level } from './rows.js';

/**
 * One asset's L2 book: price → size per side. Every tick reports the best bid and ask, so the best
 * prices are kept incrementally; only removing the best level costs a scan of that side.
 */
export class Book {
  private readonly bids = new Map<number, number>();
  private readonly asks = new Map<number, number>();
  // Empty sides hold -∞ / +∞ so a plain comparison admits the first level.
  private topBid = -Infinity;
  private topAsk = Infinity;

  /** Replaces the whole book (a `book` event). Levels of size 0 are dropped; order does not matter. */
  replace(bids: readonly Level[], asks: readonly Level[]): void {
    this.bids.clear();
    this.asks.clear();
    this.topBid = -Infinity;
    this.topAsk = Infinity;
    for (const [price, size] of bids) this.setBid(price, size);
    for (const [price, size] of asks) this.setAsk(price, size);
  }

  /** Sets the total size at one level; size 0 removes it. */
  set(side: 'bid' | 'ask', price: number, size: number): void {
    if (side === 'bid') this.setBid(price, size);
    else this.setAsk(price, size);
  }

  /** Highest bid, 0 when there are no bids. */
  bestBid(): number {
    return this.topBid === -Infinity ? 0 : this.topBid;
  }

  /** Lowest ask, 1 when there are no asks. */
  bestAsk(): number {
    return this.topAsk === Infinity ? 1 : this.topAsk;
  }

  /** Bids by price descending, asks ascending, as stored in `book_snapshots`. */
  levels(): { bids: Level[]; asks: Level[] } {
    const bids: Level[] = [...this.bids].sort((a, b) => b[0] - a[0]);
    const asks: Level[] = [...this.asks].sort((a, b) => a[0] - b[0]);
    return { bids, asks };
  }

  private setBid(price: number, size: number): void {
    if (size > 0) {
      this.bids.set(price, size);
      if (price > this.topBid) this.topBid = price;
    } else if (this.bids.delete(price) && price === this.topBid) {
      this.topBid = -Infinity;
      for (const p of this.bids.keys()) if (p > this.topBid) this.topBid = p;
    }
  }

  private setAsk(price: number, size: number): void {
    if (size > 0) {
      this.asks.set(price, size);
      if (price < this.topAsk) this.topAsk = price;
    } else if (this.asks.delete(price) && price === this.topAsk) {
      this.topAsk = Infinity;
      for (const p of this.asks.keys()) if (p < this.topAsk) this.topAsk = p;
    }
  }
}
