import type { OrderBook } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import { LoopBreaks } from '../event-loop.js';
import { latestSnapshotKey } from '../queries/orderbook.js';
import { timedForwardQuery } from '../queries/timed-book-events.js';
import { type BookEvent, BookEventDecoder, KIND_CHANGE, SIDE_BUY } from './event-decoder.js';

/** A book event with the time its frame was received (src/queries/receive-time.ts), in Unix µs. */
export interface TimedBookEvent extends BookEvent {
  localUs: number;
}

/** BookEventDecoder for reads that add the receive time (timedForwardQuery) after its columns. */
class TimedEventDecoder extends BookEventDecoder {
  protected override row(): void {
    super.row();
    this.need(8);
    (this.event as TimedBookEvent).localUs = this.int64(this.pos);
    this.pos += 8;
  }
}

/**
 * Called with each event before the fold applies it, and the book as it stands then (the decoder
 * reuses the event object; a snapshot's levels are its own arrays, as stored: best first). It returns
 * true when it holds all it should before handing something on (a full chunk): the fold then yields
 * once the event is applied.
 */
export type EventVisitor = (event: TimedBookEvent, book: OrderBook) => boolean | void;

/** Events visited per turn at most, as in bookStates (fold.ts). */
const EVENTS_PER_TURN = 16_384;

/**
 * Every book event of an asset through `to`, from the latest snapshot at or before `from` (so the
 * events before `from` build the book first; the visitor tells them by their time), in (t, seq)
 * order, folded into `book` with src/book after `visit` saw it: where bookStates (fold.ts) hands out
 * the book once per millisecond, this hands out each event with the book before it, and its receive
 * time, which the Tardis files need (one row per change, a book refresh as the levels it changed).
 * One streaming read of book_events; stopping, or leaving the loop, cancels it. Yields once per turn
 * (after each chunk of the read and every EVENTS_PER_TURN events) and after each event its visitor
 * returned true for.
 */
export async function* bookEventFold(
  engine: Engine,
  q: { assetId: string; from: number; to: number },
  book: OrderBook,
  visit: EventVisitor,
  signal?: AbortSignal,
): AsyncGenerator<void> {
  const start = await latestSnapshotKey(engine, q.assetId, q.from, signal);
  const usualMarket = start?.[2] ?? '';
  const read = timedForwardQuery(q.assetId, { ms: start?.[0] ?? 0, seq: start?.[1] ?? 0 }, q.to, usualMarket);
  const bytes = engine.stream(read.sql, 'RowBinary', { params: read.params, signal });
  const decoder = new TimedEventDecoder(usualMarket);
  const breaks = new LoopBreaks();
  let visited = 0;
  try {
    for await (const chunk of bytes) {
      decoder.feed(chunk);
      for (let e = decoder.read() as TimedBookEvent | undefined; e !== undefined; e = decoder.read() as TimedBookEvent | undefined) {
        const full = visit(e, book) === true;
        if (e.kind === KIND_CHANGE) book.apply(e.bookSide === SIDE_BUY ? 'bid' : 'ask', e.price, e.size);
        else book.replace(e.bids, e.asks);
        if (++visited % EVENTS_PER_TURN === 0 || full) {
          yield;
          if (breaks.due()) await breaks.turn();
        }
      }
      yield;
      if (breaks.due()) await breaks.turn();
    }
  } finally {
    // Stopping or leaving the loop early cancels the engine query.
    bytes.destroy();
  }
  if (decoder.unfinished) throw new Error('book_events read ended inside a row');
}
