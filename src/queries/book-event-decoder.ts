import type { Level } from '../book/index.js';

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

/** Thrown when a row runs past the bytes at hand: it is decoded again once the next chunk arrives. */
const INCOMPLETE = Symbol('incomplete row');

export class BookEventDecoder {
  private rest: Buffer | null = null;
  private readonly event: BookEvent = { ms: 0, kind: 0, market: '', price: 0, size: 0, bookSide: 0, bids: [], asks: [] };
  private marketBytes: Buffer = Buffer.alloc(0);
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;

  /** Every complete row of `chunk` (after the row a previous chunk left unfinished). */
  *decode(chunk: Buffer): Generator<BookEvent> {
    this.buf = this.rest ? Buffer.concat([this.rest, chunk]) : chunk;
    this.rest = null;
    this.pos = 0;
    while (this.pos < this.buf.length) {
      const start = this.pos;
      try {
        this.row();
      } catch (err) {
        if (err !== INCOMPLETE) throw err;
        this.rest = this.buf.subarray(start);
        return;
      }
      yield this.event;
    }
  }

  /** True when the stream ended in the middle of a row (a truncated result). */
  get unfinished(): boolean {
    return this.rest !== null && this.rest.length > 0;
  }

  private row(): void {
    const e = this.event;
    this.need(9);
    const b = this.buf;
    // Int64 ms: two 32-bit halves (exact below 2^53).
    e.ms = b.readUInt32LE(this.pos) + b.readInt32LE(this.pos + 4) * 4_294_967_296;
    e.kind = b[this.pos + 8];
    this.pos += 9;
    e.market = this.string();
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

  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw INCOMPLETE;
  }

  private varUInt(): number {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      this.need(1);
      const byte = this.buf[this.pos++];
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  }

  /** Markets repeat row after row: the previous string is reused when the bytes are the same. */
  private string(): string {
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

  private levels(): Level[] {
    const count = this.varUInt();
    this.need(count * 16);
    const out: Level[] = new Array(count);
    for (let i = 0; i < count; i++, this.pos += 16) out[i] = { price: this.buf.readDoubleLE(this.pos), size: this.buf.readDoubleLE(this.pos + 8) };
    return out;
  }
}
