import { OrderBook } from '../book/index.js';
import type { EventVisitor, TimedBookEvent } from '../book-history/event-fold.js';
import type { ChunkBuffer } from './chunk-buffer.js';
import { IncrementalBookWriter } from './tardis-book-changes.js';
import { BookTopsWriter } from './tardis-book-tops.js';
import { TARDIS_EXCHANGE, type TardisDataType, tardisHeader } from './tardis-csv.js';

/**
 * The Tardis files made from folded books (docs/TARDIS.md §1): incremental_book_L2, book_snapshot_N
 * and quotes of one asset and one UTC day. The fold hands each stored event with the book before it
 * (bookEventFold); a writer turns it into rows, written byte by byte into chunks (ChunkBuffer), which
 * leave once per turn of the fold, and as soon as one is full: the file streams, whatever the day holds.
 */
interface TardisBookWriter {
  readonly out: ChunkBuffer;
  /** Each event, before the fold applies it, with the book as it stands then. */
  visit(event: TimedBookEvent, book: OrderBook): void;
  /** After the last event, with the book as it ends. */
  finish(book: OrderBook): void;
}

/** Runs the fold into `book`, calling `visit` with each event; yields once per turn. */
export type BookEventSource = (book: OrderBook, visit: EventVisitor) => AsyncGenerator<void>;

export interface TardisFileScope {
  /** The asset id: the file's `symbol` column. */
  symbol: string;
  /** 00:00 UTC of the file's day, Unix ms: events before it only build the book. */
  dayStart: number;
}

export async function* tardisBookChunks(type: Exclude<TardisDataType, 'trades'>, scope: TardisFileScope, source: BookEventSource): AsyncGenerator<Buffer> {
  const prefix = Buffer.from(`${TARDIS_EXCHANGE},${scope.symbol},`, 'latin1');
  const writer: TardisBookWriter =
    type === 'incremental_book_L2'
      ? new IncrementalBookWriter(prefix, scope.dayStart)
      : new BookTopsWriter(prefix, scope.dayStart, type === 'quotes' ? 'quotes' : type === 'book_snapshot_25' ? 25 : 5);
  const out = writer.out;
  out.text(tardisHeader(type));
  const book = new OrderBook();
  // A full chunk asks the fold for a turn: it leaves before the next event's rows are made, so a
  // stalled reader holds one chunk (a turn of the fold was 16,384 events, megabytes of rows).
  const visit = (event: TimedBookEvent, at: OrderBook) => {
    writer.visit(event, at);
    return out.hasFull;
  };
  for await (const _turn of source(book, visit)) yield* out.take();
  writer.finish(book);
  yield* out.drain();
}
