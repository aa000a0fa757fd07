import { type BookSide, type Level, OrderBook } from '../book/index.js';
import { KIND_CHANGE, SIDE_BUY } from '../book-history/event-decoder.js';
import type { TimedBookEvent } from '../book-history/event-fold.js';
import { ChunkBuffer } from './chunk-buffer.js';
import { endRow, NUMBER_BYTES, numberCell, rowStart, TIME_BYTES } from './tardis-rows.js';

/**
 * incremental_book_L2 (docs/TARDIS.md §1.1): `…,is_snapshot,side,price,amount`, `amount` the level's
 * new total size (0 removes it).
 *
 * - The file opens with one snapshot (`is_snapshot` true): the book at 00:00 UTC (every event before
 *   the day applied), at that time; or, for an asset whose first book comes during the day, its first
 *   `book` at its own time (an empty snapshot before its first change when a change comes first).
 *   Rows as in Tardis's own files: asks best first (ascending), then bids best first (descending),
 *   and each side closed by a zero-amount row at the price no level can have (ask 1, bid 0), so that
 *   a consumer that clears a side only down to the snapshot's last row (hftbacktest) clears it all.
 * - Then every stored event of the day in (t, seq) order, as non-snapshot rows: a `price_change` as
 *   its level, a later `book` (and the ingester's checkpoints, which change nothing) as the levels
 *   it changed against the book before it: asks then bids, best first, removed levels with amount 0.
 *   Applying the rows in order gives the book /v1/orderbook reconstructs after every event.
 * - A file whose last rows are the snapshot's ends with a no-op update (bid 0, amount 0): consumers
 *   that apply a snapshot when the first update after it arrives (hftbacktest) apply this one too.
 */
const SNAPSHOT = Buffer.from(',true,', 'latin1');
const UPDATE = Buffer.from(',false,', 'latin1');
const SIDE_TEXT: Record<BookSide, Buffer> = { bid: Buffer.from('bid', 'latin1'), ask: Buffer.from('ask', 'latin1') };
/** Zero-amount levels that close a snapshot's sides: prices outside Polymarket's (0, 1). */
const CLOSE_ASKS: Level = { price: 1, size: 0 };
const CLOSE_BIDS: Level = { price: 0, size: 0 };
const EMPTY = new OrderBook();

export class IncrementalBookWriter {
  readonly out: ChunkBuffer;
  /** An event came before the day: the asset had a book when it began. */
  private before = false;
  private opened = false;
  /** The last row written belongs to a snapshot. */
  private inSnapshot = false;
  /** The times of the rows being written (set by `at`), µs. */
  private us = 0;
  private localUs = 0;

  constructor(
    private readonly prefix: Buffer,
    private readonly dayStart: number,
  ) {
    this.out = new ChunkBuffer(prefix.length + 2 * TIME_BYTES + UPDATE.length + 4 + 2 * NUMBER_BYTES + 1);
  }

  visit(e: TimedBookEvent, book: OrderBook): void {
    if (e.ms < this.dayStart) {
      this.before = true;
      return;
    }
    if (!this.opened) {
      this.opened = true;
      if (this.before) this.dayStartSnapshot(book);
      else {
        this.at(e.ms * 1000, e.localUs);
        if (e.kind !== KIND_CHANGE) return this.snapshot(OrderBook.of(e.bids, e.asks));
        this.snapshot(EMPTY);
      }
    }
    this.at(e.ms * 1000, e.localUs);
    if (e.kind === KIND_CHANGE) {
      this.row(UPDATE, e.bookSide === SIDE_BUY ? 'bid' : 'ask', e.price, e.size);
      return;
    }
    const next = OrderBook.of(e.bids, e.asks);
    this.changes('ask', book.side('ask'), next.side('ask'));
    this.changes('bid', book.side('bid'), next.side('bid'));
  }

  finish(book: OrderBook): void {
    if (!this.opened && this.before) this.dayStartSnapshot(book);
    // At the last rows' times.
    if (this.inSnapshot) this.row(UPDATE, 'bid', 0, 0);
  }

  /** The rows that follow are at these times. */
  private at(us: number, localUs: number): void {
    this.us = us;
    this.localUs = localUs;
  }

  /** The book as the day began, at 00:00 (no frame was received then: both times are the day's start). */
  private dayStartSnapshot(book: OrderBook): void {
    this.at(this.dayStart * 1000, this.dayStart * 1000);
    this.snapshot(book);
  }

  private snapshot(book: OrderBook): void {
    for (const level of book.side('ask')) this.row(SNAPSHOT, 'ask', level.price, level.size);
    this.row(SNAPSHOT, 'ask', CLOSE_ASKS.price, CLOSE_ASKS.size);
    for (const level of book.side('bid')) this.row(SNAPSHOT, 'bid', level.price, level.size);
    this.row(SNAPSHOT, 'bid', CLOSE_BIDS.price, CLOSE_BIDS.size);
  }

  /** One row per price whose size differs between two sides (best first, both), 0 for a level gone. */
  private changes(side: BookSide, old: readonly Level[], next: readonly Level[]): void {
    // Best first on both: a merge. For asks a lower price is better, for bids a higher one.
    const sign = side === 'ask' ? 1 : -1;
    let i = 0;
    let j = 0;
    while (i < old.length || j < next.length) {
      const a = old[i];
      const b = next[j];
      const order = a === undefined ? 1 : b === undefined ? -1 : sign * (a.price - b.price);
      if (order < 0) {
        this.row(UPDATE, side, a.price, 0);
        i++;
      } else if (order > 0) {
        this.row(UPDATE, side, b.price, b.size);
        j++;
      } else {
        if (a.size !== b.size) this.row(UPDATE, side, b.price, b.size);
        i++;
        j++;
      }
    }
  }

  private row(kind: Buffer, side: BookSide, price: number, amount: number): void {
    const out = this.out;
    out.room();
    rowStart(out, this.prefix, this.us, this.localUs);
    out.buf.set(kind, out.pos);
    out.pos += kind.length;
    out.buf.set(SIDE_TEXT[side], out.pos);
    out.pos += 3;
    numberCell(out, price);
    numberCell(out, amount);
    endRow(out);
    this.inSnapshot = kind === SNAPSHOT;
  }
}
