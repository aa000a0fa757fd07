import { type Level, OrderBook } from '../book/index.js';
import { partitionPoint } from '../partition-point.js';
import type { BookAt } from './port.js';

/**
 * Object headers, the two typed arrays' backing stores and headers, the cache's map entries:
 * measured with --expose-gc (the bench's cache-memory row: heap after GC / segments was ~350 bytes
 * below what this counts; the margin absorbs the measurement's noise).
 */
const FIXED_BYTES = 900;

/**
 * One segment of an asset's book history: a snapshot (exchange `book` or checkpoint) and the
 * changes after it, up to the next snapshot. Every instant in [start, end) is answered from it alone.
 * Stored in typed arrays, so its memory is what its arrays hold (bytes), not a guess about objects.
 */
export class BookSegment {
  readonly bytes: number;
  private readonly hasSnapshot: boolean;
  private readonly snapMs: number;
  private readonly snapMarket: string;
  /** Levels in the snapshot: bids then asks. */
  private readonly bidLevels: number;
  private readonly askLevels: number;
  /** Changes after the snapshot. */
  private readonly n: number;
  /**
   * Everything numeric in one array (a typed array per field cost ~1.3 KB of headers a segment):
   * the snapshot's bids then asks as (price, size) pairs, then the changes' ms, prices and sizes.
   */
  private readonly data: Float64Array;
  /** Per change: bit 0 set for a bid, the rest the index of its market in `markets`. */
  private readonly sideMarket: Uint16Array;
  private readonly markets: string[];
  /** How many late-data notices touched [start, end] when the segment was read (cache.ts). */
  notices = 0;
  /** The engine's write epoch when the segment was last known valid; null: ask the data. */
  validAtEpoch: number | null = null;
  /** When the cache last stored or answered from it (its clock: BookCache.store). */
  used = 0;

  /**
   * `events`: its snapshot (an asset's first segment may start without one) and the changes after
   * it, in (t, seq) order. `start` is the snapshot's time (0 without one); `end` the first instant
   * not covered, which is also the time of the first stored event after the segment (the next
   * snapshot's, or the first one not read); Infinity when these are the newest events.
   */
  constructor(
    readonly assetId: string,
    readonly start: number,
    readonly end: number,
    events: SegmentBuilder,
  ) {
    const first = events.snapshot;
    this.hasSnapshot = first !== null;
    const bids = first?.bids ?? [];
    const asks = first?.asks ?? [];
    this.snapMs = first?.ms ?? 0;
    this.snapMarket = first?.market ?? '';
    this.bidLevels = bids.length;
    this.askLevels = asks.length;
    const n = (this.n = events.n);
    const data = (this.data = new Float64Array(2 * (bids.length + asks.length) + 3 * n));
    let k = 0;
    for (const side of [bids, asks]) {
      for (const l of side) {
        data[k++] = l.price;
        data[k++] = l.size;
      }
    }
    data.set(events.ms.subarray(0, n), k);
    data.set(events.price.subarray(0, n), k + n);
    data.set(events.size.subarray(0, n), k + 2 * n);
    this.sideMarket = new Uint16Array(n);
    this.markets = [];
    let m = -1;
    for (let i = 0; i < n; i++) {
      const market = events.market[i];
      // Markets repeat change after change: the last one's index is tried first.
      if (m < 0 || this.markets[m] !== market) {
        m = this.markets.indexOf(market);
        if (m < 0) m = this.markets.push(market) - 1;
      }
      this.sideMarket[i] = (m << 1) | events.bid[i];
    }
    const strings = [this.snapMarket, ...this.markets].reduce((sum, s) => sum + 2 * s.length + 24, 0);
    this.bytes = FIXED_BYTES + strings + data.byteLength + this.sideMarket.byteLength;
  }

  /** Whether the segment answers `at`. */
  covers(at: number): boolean {
    return at >= this.start && at < this.end;
  }

  /** The book at `at` (covered): the snapshot and every change with t ≤ at; null before the asset's first event. */
  at(at: number): BookAt | null {
    const { data, n } = this;
    const base = 2 * (this.bidLevels + this.askLevels);
    // Changes with ms ≤ at: the first one after it.
    const lo = partitionPoint(0, n, (i) => data[base + i] <= at);
    if (lo === 0 && !this.hasSnapshot) return null;
    const book = new OrderBook();
    if (this.hasSnapshot) book.replace(levels(data, 0, this.bidLevels), levels(data, 2 * this.bidLevels, this.askLevels));
    for (let i = 0; i < lo; i++) book.apply(this.sideMarket[i] & 1 ? 'bid' : 'ask', data[base + n + i], data[base + 2 * n + i]);
    return {
      market: lo === 0 ? this.snapMarket : this.markets[this.sideMarket[lo - 1] >> 1],
      timestamp: lo === 0 ? this.snapMs : data[base + lo - 1],
      book,
      next: lo < n ? data[base + lo] : this.end,
    };
  }
}

/** `count` (price, size) pairs of `data` from `from`, as levels. */
function levels(data: Float64Array, from: number, count: number): Level[] {
  const out: Level[] = new Array(count);
  for (let i = 0; i < count; i++) out[i] = { price: data[from + 2 * i], size: data[from + 2 * i + 1] };
  return out;
}

/**
 * The events of the segment a read is in, gathered into arrays reused from one segment to the next
 * (no object per event: a fill reads millions), then copied into a BookSegment of their exact size.
 */
export class SegmentBuilder {
  snapshot: { ms: number; market: string; bids: Level[]; asks: Level[] } | null = null;
  /** Changes gathered; the arrays below hold them in their first n places. */
  n = 0;
  ms = new Float64Array(256);
  price = new Float64Array(256);
  size = new Float64Array(256);
  /** 1 for a bid. */
  bid = new Uint8Array(256);
  market: string[] = [];

  get empty(): boolean {
    return this.snapshot === null && this.n === 0;
  }

  setSnapshot(ms: number, market: string, bids: Level[], asks: Level[]): void {
    this.snapshot = { ms, market, bids, asks };
  }

  addChange(ms: number, market: string, price: number, size: number, bid: boolean): void {
    if (this.n === this.ms.length) this.grow();
    const i = this.n++;
    this.ms[i] = ms;
    this.price[i] = price;
    this.size[i] = size;
    this.bid[i] = bid ? 1 : 0;
    this.market[i] = market;
  }

  /** Drops the last changes while they are at or after `ms`. */
  dropFrom(ms: number): void {
    while (this.n > 0 && this.ms[this.n - 1] >= ms) this.n--;
  }

  /** The segment of what was gathered, which is then forgotten. */
  build(assetId: string, start: number, end: number): BookSegment {
    const segment = new BookSegment(assetId, start, end, this);
    this.clear();
    return segment;
  }

  clear(): void {
    this.snapshot = null;
    this.n = 0;
  }

  private grow(): void {
    const n = 2 * this.ms.length;
    const grown = <T extends Float64Array | Uint8Array>(a: T, b: T) => (b.set(a), b);
    this.ms = grown(this.ms, new Float64Array(n));
    this.price = grown(this.price, new Float64Array(n));
    this.size = grown(this.size, new Float64Array(n));
    this.bid = grown(this.bid, new Uint8Array(n));
  }
}
