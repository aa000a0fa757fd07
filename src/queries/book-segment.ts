import { OrderBook, type Level } from '../book/index.js';
import type { BookAt } from './book-reader.js';

/**
 * One segment of an asset's book history: a snapshot (exchange `book` or checkpoint) and the
 * changes after it, up to the next snapshot. Every instant in [start, end) is answered from it alone.
 * Stored in typed arrays, so its memory is what its arrays hold (bytes), not a guess about objects.
 */
export interface SegmentEvent {
  ms: number;
  /** A snapshot's levels, or null for a change. */
  snapshot: { bids: Level[]; asks: Level[] } | null;
  market: string;
  price: number;
  size: number;
  bid: boolean;
}

/**
 * Object headers, the typed arrays' backing stores and headers, the cache's map entries: measured
 * with --expose-gc (`npm run bench`, 7,263 segments of the largest asset: heap after GC / segments).
 */
const FIXED_BYTES = 1600;

export class BookSegment {
  readonly bytes: number;
  private readonly hasSnapshot: boolean;
  private readonly snapMs: number;
  private readonly snapBids: Float64Array;
  private readonly snapAsks: Float64Array;
  private readonly snapMarket: string;
  private readonly ms: Float64Array;
  private readonly price: Float64Array;
  private readonly size: Float64Array;
  private readonly bid: Uint8Array;
  private readonly marketOf: Uint16Array;
  private readonly markets: string[];
  /** How many late-data notices touched [start, end] when the segment was read (book-cache.ts). */
  notices = 0;
  /** The engine's write epoch when the segment was last known valid; null: ask the data. */
  validAtEpoch: number | null = null;

  /**
   * `events`: the snapshot first (when there is one: an asset's first segment may start without one)
   * then its changes, in (t, seq) order. `start` is the snapshot's time (0 without one); `end` the
   * first instant not covered, which is also the time of the first stored event after the segment
   * (the next snapshot's, or the first one not read); Infinity when these are the newest events.
   */
  constructor(
    readonly assetId: string,
    readonly start: number,
    readonly end: number,
    events: SegmentEvent[],
  ) {
    const first = events[0]?.snapshot ? events[0] : null;
    this.hasSnapshot = first !== null;
    const changes = first ? events.slice(1) : events;
    this.snapMs = first?.ms ?? 0;
    this.snapBids = flat(first?.snapshot?.bids ?? []);
    this.snapAsks = flat(first?.snapshot?.asks ?? []);
    this.snapMarket = first?.market ?? '';
    const n = changes.length;
    this.ms = new Float64Array(n);
    this.price = new Float64Array(n);
    this.size = new Float64Array(n);
    this.bid = new Uint8Array(n);
    this.marketOf = new Uint16Array(n);
    this.markets = [];
    const index = new Map<string, number>();
    changes.forEach((e, i) => {
      this.ms[i] = e.ms;
      this.price[i] = e.price;
      this.size[i] = e.size;
      this.bid[i] = e.bid ? 1 : 0;
      let m = index.get(e.market);
      if (m === undefined) index.set(e.market, (m = this.markets.push(e.market) - 1));
      this.marketOf[i] = m;
    });
    const strings = [this.snapMarket, ...this.markets].reduce((sum, s) => sum + 2 * s.length + 24, 0);
    this.bytes = FIXED_BYTES + strings + [this.snapBids, this.snapAsks, this.ms, this.price, this.size, this.bid, this.marketOf].reduce((sum, a) => sum + a.byteLength, 0);
  }

  /** Whether the segment answers `at`. */
  covers(at: number): boolean {
    return at >= this.start && at < this.end;
  }

  /** The book at `at` (covered): the snapshot and every change with t ≤ at; null before the asset's first event. */
  at(at: number): BookAt | null {
    // Changes with ms ≤ at: binary search for the first one after it.
    let lo = 0;
    let hi = this.ms.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.ms[mid] <= at) lo = mid + 1;
      else hi = mid;
    }
    if (lo === 0 && !this.hasSnapshot) return null;
    const book = new OrderBook();
    if (this.hasSnapshot) book.replace(levels(this.snapBids), levels(this.snapAsks));
    for (let i = 0; i < lo; i++) book.apply(this.bid[i] ? 'bid' : 'ask', this.price[i], this.size[i]);
    return {
      market: lo === 0 ? this.snapMarket : this.markets[this.marketOf[lo - 1]],
      timestamp: lo === 0 ? this.snapMs : this.ms[lo - 1],
      book,
      next: lo < this.ms.length ? this.ms[lo] : this.end,
    };
  }
}

const EMPTY = new Float64Array(0);

function flat(levels: Level[]): Float64Array {
  if (levels.length === 0) return EMPTY;
  const out = new Float64Array(levels.length * 2);
  levels.forEach((l, i) => {
    out[2 * i] = l.price;
    out[2 * i + 1] = l.size;
  });
  return out;
}

function levels(flatLevels: Float64Array): Level[] {
  const out: Level[] = new Array(flatLevels.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = { price: flatLevels[2 * i], size: flatLevels[2 * i + 1] };
  return out;
}
