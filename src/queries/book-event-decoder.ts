import type { Level } from '../book/index.js';
import { RowBinaryReader } from '../clickhouse/row-binary.js';

/**
 * Book events in the engine's RowBinary format, decoded straight from the bytes: the long reads
 * (book datasets, replays, sampled books) fold millions of rows, and parsing one JSON line per row
 * cost several times what the engine takes to produce it. The SELECT must list BINARY_EVENT_COLUMNS.
 */
export const BINARY_EVENT_COLUMNS = 'toUnixTimestamp64Milli(t) AS ms, kind, market, price, size, book_side, bids, asks';

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

export class BookEventDecoder extends RowBinaryReader {
  private readonly event: BookEvent = { ms: 0, kind: 0, market: '', price: 0, size: 0, bookSide: 0, bids: [], asks: [] };
  private marketBytes: Buffer = Buffer.alloc(0);

  /** Every complete row of `chunk` (after the row a previous chunk left unfinished). */
  *decode(chunk: Buffer): Generator<BookEvent> {
    this.begin(chunk);
    while (this.next()) yield this.event;
  }

  protected row(): void {
    const e = this.event;
    this.need(9);
    const b = this.buf;
    // Int64 ms: two 32-bit halves (exact below 2^53).
    e.ms = b.readUInt32LE(this.pos) + b.readInt32LE(this.pos + 4) * 4_294_967_296;
    e.kind = b[this.pos + 8];
    this.pos += 9;
    e.market = this.market();
    this.need(17);
    e.price = b.readDoubleLE(this.pos);
    e.size = b.readDoubleLE(this.pos + 8);
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

  /** Markets repeat row after row: the previous string is reused when the bytes are the same. */
  private market(): string {
    const length = this.varUInt();
    this.need(length);
    const end = this.pos + length;
    if (length !== this.marketBytes.length || this.buf.compare(this.marketBytes, 0, length, this.pos, end) !== 0) {
      this.marketBytes = Buffer.from(this.buf.subarray(this.pos, end));
      this.event.market = this.buf.toString('utf8', this.pos, end);
    }
    this.pos = end;
    return this.event.market;
  }

}
