import type { Level, OrderBook } from '../book/index.js';
import type { TimedBookEvent } from '../book-history/event-fold.js';
import { ChunkBuffer } from './chunk-buffer.js';
import { endRow, levelCells, NUMBER_BYTES, numberCell, rowStart, TIME_BYTES } from './tardis-rows.js';

/**
 * book_snapshot_N and quotes (docs/TARDIS.md §1.3, §1.4): the top of the book, one row whenever what
 * the file shows of it changed, as Tardis writes them.
 *
 * - The book is read after every millisecond with events (after all of that millisecond's events, as
 *   /v1/orderbook?timestamp=<ms> answers), and a row is written when its top `depth` levels (prices
 *   and sizes; quotes: the best level of each side) differ from the previous row's. `timestamp` is
 *   that millisecond, `local_timestamp` the receive time of its last event.
 * - The first row is the book at 00:00 UTC, at that time, when the asset had one then (always
 *   written); an asset whose first book comes during the day starts there.
 * - book_snapshot_N: `asks[i].price,asks[i].amount,bids[i].price,bids[i].amount` for i < N, best
 *   first; quotes: `ask_amount,ask_price,bid_price,bid_amount`. Absent levels are empty cells.
 */
export class BookTopsWriter {
  readonly out: ChunkBuffer;
  private readonly depth: number;
  /** The top levels of the last row written: price and size per level, asks then bids, NaN when absent. */
  private readonly shown: Float64Array;
  private before = false;
  private opened = false;
  /** A millisecond whose events were applied and not yet looked at, and the receive time of its last one. */
  private pendingMs = -1;
  private pendingLocalUs = 0;

  constructor(
    private readonly prefix: Buffer,
    private readonly dayStart: number,
    private readonly shape: number | 'quotes',
  ) {
    this.depth = shape === 'quotes' ? 1 : shape;
    this.shown = new Float64Array(4 * this.depth).fill(Number.NaN);
    this.out = new ChunkBuffer(prefix.length + 2 * TIME_BYTES + 4 * this.depth * NUMBER_BYTES + 1);
  }

  visit(e: TimedBookEvent, book: OrderBook): void {
    if (e.ms < this.dayStart) {
      this.before = true;
      return;
    }
    if (!this.opened) {
      this.opened = true;
      if (this.before) this.row(book, this.dayStart * 1000, this.dayStart * 1000);
    }
    // A new millisecond: the previous one's events are all applied.
    if (this.pendingMs >= 0 && e.ms !== this.pendingMs) this.rowIfChanged(book, this.pendingMs * 1000, this.pendingLocalUs);
    this.pendingMs = e.ms;
    this.pendingLocalUs = e.localUs;
  }

  finish(book: OrderBook): void {
    if (!this.opened && this.before) this.row(book, this.dayStart * 1000, this.dayStart * 1000);
    if (this.pendingMs >= 0) this.rowIfChanged(book, this.pendingMs * 1000, this.pendingLocalUs);
  }

  private rowIfChanged(book: OrderBook, us: number, localUs: number): void {
    if (this.changed(book.side('ask'), 0) || this.changed(book.side('bid'), 2 * this.depth)) this.row(book, us, localUs);
  }

  /** Whether a side's top levels differ from those of the last row (stored from `at` in `shown`). */
  private changed(levels: readonly Level[], at: number): boolean {
    const shown = this.shown;
    for (let i = 0; i < this.depth; i++) {
      const level = levels[i];
      const price = shown[at + 2 * i];
      if (level === undefined ? !Number.isNaN(price) : level.price !== price || level.size !== shown[at + 2 * i + 1]) return true;
    }
    return false;
  }

  private remember(levels: readonly Level[], at: number): void {
    for (let i = 0; i < this.depth; i++) {
      this.shown[at + 2 * i] = levels[i]?.price ?? Number.NaN;
      this.shown[at + 2 * i + 1] = levels[i]?.size ?? Number.NaN;
    }
  }

  private row(book: OrderBook, us: number, localUs: number): void {
    const out = this.out;
    const asks = book.side('ask');
    const bids = book.side('bid');
    this.remember(asks, 0);
    this.remember(bids, 2 * this.depth);
    out.room();
    rowStart(out, this.prefix, us, localUs);
    if (this.shape === 'quotes') {
      numberCell(out, asks[0]?.size);
      numberCell(out, asks[0]?.price);
      numberCell(out, bids[0]?.price);
      numberCell(out, bids[0]?.size);
    } else {
      for (let i = 0; i < this.depth; i++) {
        levelCells(out, asks[i]);
        levelCells(out, bids[i]);
      }
    }
    endRow(out);
  }
}
