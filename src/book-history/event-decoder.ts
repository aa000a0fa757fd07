import type { Level } from '../book/index.js';
import { RowBinaryReader } from '../clickhouse/row-binary.js';

/** kind and book_side are Enum8: RowBinary carries their numeric values (007_book_events.sql). */
export const KIND_CHANGE = 1;
export const SIDE_BUY = 1;

/** One row; the decoder reuses the object from row to row (bids/asks are fresh arrays on snapshots). */
export interface BookEvent {
  ms: number;
  kind: number;
  market: string;
  price: number;
  size: number;
  bookSide: number;
  bids: Level[];
  asks: Level[];
}

/**
 * Book events in the engine's RowBinary format, decoded straight from the bytes: the long reads
 * (book datasets, sampled books, the cache's misses) fold millions of rows, and parsing one JSON
 * line per row cost several times what the engine takes to produce it. The SELECT must list
 * BINARY_EVENT_COLUMNS (src/queries/book-event-columns.ts) and bind {usual_market}.
 *
 * An asset's events almost always carry one market (its condition id, 66 bytes): sent on every row
 * it was two thirds of the bytes of a read. So a row carries its market only when it is not
 * {usual_market} (NULL otherwise), and the decoder, given the same value, fills it in. Any value is
 * exact; a right guess only makes the read smaller.
 */
export class BookEventDecoder extends RowBinaryReader {
  protected readonly event: BookEvent;

  /** `usualMarket`: the value bound to {usual_market} in the read. */
  constructor(private readonly usualMarket: string) {
    super();
    this.event = { ms: 0, kind: 0, market: usualMarket, price: 0, size: 0, bookSide: 0, bids: [], asks: [] };
  }

  /** Takes the next chunk of the read (after the row a previous chunk left unfinished). */
  feed(chunk: Buffer): void {
    this.begin(chunk);
  }

  /** The next complete row of the chunk fed, or undefined when it has no more (a loop, not a generator: this runs per event). */
  read(): BookEvent | undefined {
    return this.next() ? this.event : undefined;
  }

  protected row(): void {
    const e = this.event;
    this.need(10);
    const b = this.buf;
    e.ms = this.int64(this.pos);
    e.kind = b[this.pos + 8];
    // Nullable(String): a 1 byte means NULL, the usual market.
    const usual = b[this.pos + 9] === 1;
    this.pos += 10;
    e.market = usual ? this.usualMarket : this.string();
    this.need(17);
    e.price = this.float64(this.pos);
    e.size = this.float64(this.pos + 8);
    e.bookSide = b[this.pos + 16];
    this.pos += 17;
    if (e.kind === KIND_CHANGE) {
      // A change carries empty arrays: two zero lengths.
      this.need(2);
      this.pos += 2;
    } else {
      e.bids = this.levels();
      e.asks = this.levels();
    }
  }
}
