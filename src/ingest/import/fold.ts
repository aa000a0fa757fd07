import { type CheckpointPolicy, DEFAULT_CHECKPOINTS, EMPTY_ASK, EMPTY_BID, levelsDiffering, OrderBook } from '../../book/index.js';
import type { SnapshotRow, TickRow } from '../../clickhouse/rows.js';
import { marketEventRows } from '../market-events.js';
import type { RowSink } from '../normalizer.js';
import type { BookState } from './book-states.js';
import { type FoldRow, KIND_BOOK, KIND_CHANGE, KIND_DAY_SNAPSHOT, KIND_DELTA, KIND_TICK_SIZE, KIND_TRADE, RowsHash, SIDE_BUY, SIDE_SELL } from './events.js';

/**
 * The book pass of an engine import (docs/INGEST.md §6): the one thing SQL cannot say. It folds each
 * asset's events in arrival order into its book, exactly as the normalizer does for the same events
 * (normalizer.ts, docs/INGEST.md §2), and writes what needs the book:
 * - an exchange `book`: its tick (best bid/ask of the new book), its snapshot and its drift check
 *   against the book folded so far (when that one descends from a book: `grounded`);
 * - a checkpoint after 200 changes (or an hour of event time) of a grounded book;
 * - the tick of a trade, and of a change that states no best bid/ask, with the book's best;
 * - a market event (tick_size_change) with its archive JSON.
 * The ticks of changes that state their best bid/ask are inserted by the engine from the file: this pass
 * only applies them (`bulk`: the unit has such an insert; without it every tick is written here).
 *
 * Rows before an asset's `from` were stored by an earlier import of the same file (ledger.ts): they are
 * folded (the book, its checkpoint counter and the drift check must be what one clean import makes) and
 * nothing of them is written.
 */

/** An asset of the unit: who it is, where its rows start being written, and its book. */
export interface FoldAsset {
  assetId: string;
  /** The market of its rows (when the stream does not carry one per row). */
  market: string;
  /** The tick `side`: the outcome label upper-cased, UNKNOWN without metadata. */
  label: string;
  /** Rows with n below this are stored already; Infinity: the asset is not folded at all. */
  from: number;
  state: BookState;
  /** Events written for it in this unit. */
  written: number;
}

export interface FoldOptions {
  /** seq of row n is seqBase + n (docs/INGEST.md §6.5). */
  seqBase: number;
  /** The engine inserts the ticks of changes that state their best bid/ask. */
  bulk: boolean;
  checkpoints?: CheckpointPolicy;
}

/** Units of a pmxt-kalshi size (decimal(18,6)): deltas are summed in these, exactly. */
const MICROS = 1_000_000;

export class BookPass {
  /** The rows' hash: the file's content for the ledger. */
  readonly hash = new RowsHash();
  rows = 0;
  written = 0;
  /** Changes written by the engine's own insert (bulk). */
  bulkWritten = 0;
  /** Market events the archive states but that carry a field the contract cannot store (skipped). */
  unusable = 0;
  private lastAk = -1;
  private lastN = -1;
  private last: FoldAsset | undefined;
  private readonly policy: CheckpointPolicy;

  constructor(
    private readonly sink: RowSink,
    private readonly assets: ReadonlyMap<number, FoldAsset>,
    private readonly opts: FoldOptions,
  ) {
    this.policy = opts.checkpoints ?? DEFAULT_CHECKPOINTS;
  }

  push(r: FoldRow): void {
    if (r.n <= this.lastN) throw new Error(`the engine gave row ${r.n} after row ${this.lastN}: rows must come in file order`);
    this.lastN = r.n;
    this.rows++;
    this.hash.add(r);
    if (r.ak !== this.lastAk) {
      this.lastAk = r.ak;
      this.last = this.assets.get(r.ak);
    }
    const a = this.last;
    if (a === undefined || a.from === Infinity) return;
    const write = r.n >= a.from;
    if (write) {
      a.written++;
      this.written++;
    }
    if (r.market !== '') a.state.market = r.market;
    switch (r.kind) {
      case KIND_CHANGE:
        return this.change(a, r, write);
      case KIND_DELTA:
        return this.delta(a, r, write);
      case KIND_BOOK:
        return this.book(a, r, write);
      case KIND_TRADE:
        if (write) this.trade(a, r);
        return;
      case KIND_TICK_SIZE:
        if (write) this.tickSize(a, r);
        return;
      case KIND_DAY_SNAPSHOT:
        return this.daySnapshot(a, r, write);
    }
  }

  private change(a: FoldAsset, r: FoldRow, write: boolean): void {
    const s = a.state;
    // A book started by price_change alone is not grounded: it may lack levels an earlier file knew.
    const book = (s.book ??= new OrderBook());
    const bid = r.side === SIDE_BUY;
    book.apply(bid ? 'bid' : 'ask', r.price, r.size);
    const stated = !Number.isNaN(r.bestBid) && !Number.isNaN(r.bestAsk);
    if (write && stated && this.opts.bulk) this.bulkWritten++;
    else if (write) {
      this.tick(a, r, {
        event: 'price_change',
        best_bid: Number.isNaN(r.bestBid) ? book.bestBid() : r.bestBid,
        best_ask: Number.isNaN(r.bestAsk) ? book.bestAsk() : r.bestAsk,
        price: r.price,
        size: r.size,
        book_side: bid ? 'BUY' : 'SELL',
      });
    }
    if (!s.grounded) return;
    s.changes++;
    if (s.changes >= this.policy.changes || r.t - s.snapshotT >= this.policy.ms) this.snapshot(a, r, 1, write);
  }

  /**
   * A signed difference at a level (pmxt-kalshi): the level's new size is the one resting there plus the
   * delta, summed exactly in millionths (the archive's sizes have 6 decimals at most), 0 or below removing
   * it; then a change to that absolute size, as the exchange's own price_change would state it.
   */
  private delta(a: FoldAsset, r: FoldRow, write: boolean): void {
    const book = (a.state.book ??= new OrderBook());
    const resting = book.sizeAt(r.side === SIDE_BUY ? 'bid' : 'ask', r.price);
    const micros = Math.round(resting * MICROS) + Math.round(r.size * MICROS);
    r.size = micros > 0 ? micros / MICROS : 0;
    this.change(a, r, write);
  }

  private book(a: FoldAsset, r: FoldRow, write: boolean): void {
    const s = a.state;
    const book = OrderBook.of(r.bids, r.asks);
    // The drift check compares only a grounded book (normalizer.ts onBook).
    const differing = s.grounded ? levelsDiffering(s.book!, book) : -1;
    s.book = book;
    s.grounded = true;
    if (write) {
      const seq = this.tick(a, r, { event: 'book', best_bid: book.bestBid(), best_ask: book.bestAsk(), price: 0, size: 0, book_side: '' });
      const verdict = differing < 0 ? 'unchecked' : differing === 0 ? 'verified' : 'drifted';
      this.snapshot(a, r, 0, true);
      this.sink.bookCheck({ asset_id: a.assetId, t: r.t, seq, verdict, levels_differing: Math.max(0, differing) });
    } else this.snapshot(a, r, 0, false);
  }

  /** Tardis's book at 00:00: what the book was, not an event of the exchange. It grounds the book and is kept as a checkpoint. */
  private daySnapshot(a: FoldAsset, r: FoldRow, write: boolean): void {
    const s = a.state;
    s.book = OrderBook.of(r.bids, r.asks);
    s.grounded = true;
    this.snapshot(a, r, 1, write);
  }

  private trade(a: FoldAsset, r: FoldRow): void {
    // A trade alone creates no book: it reads the current one.
    const book = a.state.book;
    const tick: Partial<TickRow> = {
      event: 'last_trade_price',
      best_bid: book ? book.bestBid() : EMPTY_BID,
      best_ask: book ? book.bestAsk() : EMPTY_ASK,
      price: r.price,
      size: r.size,
      book_side: r.side === SIDE_BUY ? 'BUY' : r.side === SIDE_SELL ? 'SELL' : '',
    };
    if (r.fee >= 0) tick.fee_rate_bps = r.fee;
    if (r.tx !== '') tick.tx_hash = r.tx;
    this.tick(a, r, tick);
  }

  private tickSize(a: FoldAsset, r: FoldRow): void {
    const rows = marketEventRows(JSON.parse(r.raw) as Record<string, unknown>, r.t, r.raw);
    if (rows === null) {
      this.unusable++;
      return;
    }
    for (const row of rows) {
      row.seq = this.opts.seqBase + r.n;
      row.local_t = r.localUs;
      if (row.market === '') row.market = a.state.market;
      this.sink.marketEvent(row);
    }
  }

  /** Writes a tick of the row; returns its seq. */
  private tick(a: FoldAsset, r: FoldRow, fields: Partial<TickRow>): number {
    const seq = this.opts.seqBase + r.n;
    this.sink.tick({
      asset_id: a.assetId,
      t: r.t,
      seq,
      side: a.label,
      market: a.state.market,
      local_t: r.localUs,
      ...fields,
    } as TickRow);
    return seq;
  }

  /** The book after row r as a snapshot at the row's (t, seq); counts restart either way. */
  private snapshot(a: FoldAsset, r: FoldRow, checkpoint: 0 | 1, write: boolean): void {
    const s = a.state;
    if (write) {
      const row: SnapshotRow = {
        asset_id: a.assetId,
        t: r.t,
        seq: this.opts.seqBase + r.n,
        is_checkpoint: checkpoint,
        market: s.market,
        bids: s.book!.levels('bid'),
        asks: s.book!.levels('ask'),
        local_t: r.localUs,
      };
      this.sink.snapshot(row);
    }
    s.changes = 0;
    s.snapshotT = r.t;
  }
}
