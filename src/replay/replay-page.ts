import type { Level } from '../book/index.js';
import { RowBinaryReader } from '../clickhouse/row-binary.js';
import type { LoopBreaks } from '../event-loop.js';
import type { ReplayRow } from './wire.js';

/**
 * One read window of the replay (store-read.ts), held by column: a replay at `max` reads millions of
 * rows, and an array or object per row (what a JSON row format gives) made garbage collection a
 * quarter of its time. Strings and objects exist only where a row needs its own: a market that is
 * not its asset's usual one, and a book's levels.
 */
export class ReplayPage {
  length = 0;
  ms = new Float64Array(INITIAL_ROWS);
  seq = new Float64Array(INITIAL_ROWS);
  /** ticks.event's enum value (KINDS). */
  kind = new Uint8Array(INITIAL_ROWS);
  /** Position of the row's asset in `assets`. */
  asset = new Uint16Array(INITIAL_ROWS);
  bestBid = new Float64Array(INITIAL_ROWS);
  bestAsk = new Float64Array(INITIAL_ROWS);
  price = new Float64Array(INITIAL_ROWS);
  size = new Float64Array(INITIAL_ROWS);
  /** ticks.book_side's enum value (SIDES). */
  side = new Uint8Array(INITIAL_ROWS);
  /** When the recorder received the row's frame (local_t), Unix µs. */
  local = new Float64Array(INITIAL_ROWS);
  /** A trade's fee rate in basis points; -1 when none is stored. */
  fee = new Int32Array(INITIAL_ROWS);
  /** A trade's transaction hash or a market event's raw JSON, by row (rows without one have ''). */
  readonly textOf = new Map<number, string>();
  /** Rows whose market is not their asset's usual one (`markets`), by row. */
  readonly marketOf = new Map<number, string>();
  /** The levels of the `book` rows, by row. */
  readonly levelsOf = new Map<number, { bids: Level[]; asks: Level[] }>();

  constructor(
    /** The assets read, and each one's usual market, in the same order. */
    readonly assets: readonly string[],
    readonly markets: readonly string[],
  ) {}

  /** Row `i` written into `into` (one array reused row after row: nothing may keep it). */
  row(i: number, into: ReplayRow): ReplayRow {
    const a = this.asset[i];
    const kind = KINDS[this.kind[i]];
    const levels = kind === 'book' ? this.levelsOf.get(i)! : NO_BOOK;
    into[0] = this.ms[i];
    into[1] = this.seq[i];
    into[2] = kind;
    into[3] = this.assets[a];
    into[4] = this.marketOf.get(i) ?? this.markets[a];
    into[5] = this.bestBid[i];
    into[6] = this.bestAsk[i];
    into[7] = this.price[i];
    into[8] = this.size[i];
    into[9] = SIDES[this.side[i]];
    into[10] = levels.bids;
    into[11] = levels.asks;
    into[12] = this.fee[i] < 0 ? null : this.fee[i];
    into[13] = this.textOf.get(i) ?? '';
    return into;
  }

  /** Empty again, its columns kept for the next window's rows. */
  clear(): void {
    this.length = 0;
    this.textOf.clear();
    this.marketOf.clear();
    this.levelsOf.clear();
  }

  /** Room for one more row. */
  reserve(): void {
    if (this.length < this.ms.length) return;
    const rows = this.ms.length * 2;
    this.ms = grown(this.ms, rows);
    this.seq = grown(this.seq, rows);
    this.kind = grown(this.kind, rows);
    this.asset = grown(this.asset, rows);
    this.bestBid = grown(this.bestBid, rows);
    this.bestAsk = grown(this.bestAsk, rows);
    this.price = grown(this.price, rows);
    this.size = grown(this.size, rows);
    this.side = grown(this.side, rows);
    this.fee = grown(this.fee, rows);
    this.local = grown(this.local, rows);
  }
}

/** Rows decoded between two looks at the clock (a mask: every 512 rows). */
const ROWS_PER_CHECK = 511;

/** Small reads (a sparse range, a test) stay small; a full window doubles to PAGE_CAP in a few steps. */
const INITIAL_ROWS = 1024;

/**
 * The enum values of ticks.event (clickhouse/001_ticks.sql), then those of market_events.event + 3
 * (012_market_events.sql), and of ticks.book_side.
 */
const KINDS = [null as never, 'price_change', 'book', 'last_trade_price', 'tick_size_change', 'best_bid_ask', 'market_resolved', 'new_market'] as const;
const SIDES = ['', 'BUY', 'SELL'] as const;
const KIND_BOOK = 2;

/** Shared by every row without levels; nothing writes to it. */
const NO_LEVELS: Level[] = [];
const NO_BOOK = { bids: NO_LEVELS, asks: NO_LEVELS };

function grown<T extends Float64Array | Uint8Array | Uint16Array | Int32Array>(column: T, rows: number): T {
  const out = new (column.constructor as new (n: number) => T)(rows);
  out.set(column);
  return out;
}

/**
 * Appends the rows of PAGE_SQL's result (store-read.ts) in RowBinary to a page, chunk by chunk as the
 * engine streams them. Column encodings, in order: ms Int64, seq UInt64, kind Int8, asset UInt16 (its
 * position in {ids}, from 1), market Nullable(String) (a null byte, then the string when 0),
 * best_bid, best_ask, price and size Float64, side Int8, bids and asks Array(Tuple(Float64, Float64))
 * (a varint count, then the pairs), fee Nullable(UInt16) (a null byte, then the value when 0), text
 * String (varint length, UTF-8), local Int64 (µs). A row that runs past the chunk is decoded again with the next one.
 */
export class PageDecoder extends RowBinaryReader {
  constructor(readonly page: ReplayPage) {
    super();
  }

  /** Every complete row of `chunk` (after the row a previous chunk left unfinished). */
  push(chunk: Buffer): void {
    this.begin(chunk);
    while (this.next());
  }

  /**
   * `push` in slices of the event loop: a page of PAGE_CAP rows is tens of ms of decoding, and the
   * pages of many replays arrive together (30 starting at once held /healthz for 150–190 ms, issue
   * 35). The first slice waits for a turn too, so pages that arrived in one poll are decoded one
   * slice per turn, with the sockets between. Stops with the signal's reason once it is aborted.
   */
  async pushInSlices(chunk: Buffer, breaks: LoopBreaks, signal: AbortSignal): Promise<void> {
    await breaks.turn();
    signal.throwIfAborted();
    this.begin(chunk);
    for (let rows = 1; this.next(); rows++) {
      if ((rows & ROWS_PER_CHECK) === 0 && breaks.due()) {
        await breaks.turn();
        signal.throwIfAborted();
      }
    }
  }

  /** Decodes one row into the page's next slot; the row counts only once all of it was read. */
  protected row(): void {
    const p = this.page;
    const b = this.buf;
    const n = p.length;
    p.reserve();
    this.need(20);
    let at = this.pos;
    p.ms[n] = this.int64(at);
    p.seq[n] = this.uint64(at + 8);
    p.kind[n] = b[at + 16];
    p.asset[n] = this.uint16(at + 17) - 1;
    this.pos = at + 20;
    const market = b[at + 19] === 0 ? this.string() : null;
    this.need(33);
    at = this.pos;
    p.bestBid[n] = this.float64(at);
    p.bestAsk[n] = this.float64(at + 8);
    p.price[n] = this.float64(at + 16);
    p.size[n] = this.float64(at + 24);
    p.side[n] = b[at + 32];
    this.pos = at + 33;
    const bids = this.levels();
    const asks = this.levels();
    this.need(1);
    let fee = -1;
    if (b[this.pos++] === 0) {
      this.need(2);
      fee = this.uint16(this.pos);
      this.pos += 2;
    }
    this.need(1);
    // Most rows have no text: skip its one length byte without making a string.
    const text = b[this.pos] === 0 ? (this.pos++, '') : this.string();
    if (market !== null) p.marketOf.set(n, market);
    if (p.kind[n] === KIND_BOOK) p.levelsOf.set(n, { bids, asks });
    p.fee[n] = fee;
    this.need(8);
    p.local[n] = this.int64(this.pos);
    this.pos += 8;
    if (text !== '') p.textOf.set(n, text);
    p.length = n + 1;
  }
}
