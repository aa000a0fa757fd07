import type { Level } from '../../book/index.js';
import { RowBinaryReader } from '../../clickhouse/row-binary.js';

/**
 * The events an archive holds, as the engine reads them (docs/INGEST.md §6): every format's SQL (pmxt.ts,
 * tardis.ts) selects its file into these columns, one row per market-channel event of one asset, in the
 * order it arrived (`n`). The engine inserts the rows it can alone; the book pass (fold.ts) reads them as
 * typed RowBinary for what needs the book.
 *
 * | column | |
 * |---|---|
 * | `n` UInt64 | arrival position in the unit (a pmxt file's row number; Tardis: merged by receive time) |
 * | `asset_id`, `market` String | |
 * | `t` DateTime64(3), `local_t` DateTime64(6) | event time, receive time |
 * | `kind` UInt8 | KIND_* below |
 * | `side` UInt8 | SIDE_*: a change's book side, a trade's taker side |
 * | `price`, `size` Float64 | |
 * | `best_bid`, `best_ask` Nullable(Float64) | as a price change states them |
 * | `fee` Nullable(UInt16), `tx` String | a trade's fee rate and transaction hash |
 * | `bids`, `asks` Array(Tuple(Float64, Float64)) | a book's levels as listed |
 * | `raw` String | a market event's JSON as the archive records it |
 * | `reason` String | why the row cannot be imported ('' when it can) |
 */
export const KIND_CHANGE = 1;
export const KIND_BOOK = 2;
export const KIND_TRADE = 3;
export const KIND_TICK_SIZE = 4;
/** Tardis's own book at 00:00 of a file's day (not a message of the exchange): stored as a checkpoint. */
export const KIND_DAY_SNAPSHOT = 5;
/**
 * A level's change stated as a signed difference (pmxt-kalshi `orderbook_delta`, docs/KALSHI.md): `size` is
 * the delta; the book pass makes it the level's new absolute size and goes on as for KIND_CHANGE.
 */
export const KIND_DELTA = 6;

export const SIDE_NONE = 0;
export const SIDE_BUY = 1;
export const SIDE_SELL = 2;

/** Whether `[price, size]` pairs (arrays of JSON texts) all hold two numbers ≥ 0. */
export function levelsValidSql(pairs: string): string {
  return `arrayAll(p -> length(p) = 2
    AND ifNull(toFloat64OrNull(trim(BOTH '"' FROM p[1])) >= 0 AND toFloat64OrNull(trim(BOTH '"' FROM p[2])) >= 0, false), ${pairs})`;
}

/** `[price, size]` pairs as the engine's Array(Tuple(Float64, Float64)) (valid ones: levelsValidSql). */
export function levelsSql(pairs: string): string {
  return `arrayMap(p -> (toFloat64OrZero(trim(BOTH '"' FROM p[1])), toFloat64OrZero(trim(BOTH '"' FROM p[2]))), ${pairs})`;
}

/**
 * The rows the engine inserts into ticks itself, from a format's events: the price changes that state
 * their best bid and ask (the book pass writes every other tick). Columns: n, asset_id, market, t,
 * local_t, side, price, size, best_bid, best_ask.
 */
export function bulkRowsSql(events: string): string {
  return `SELECT n, asset_id, market, t, local_t, side, price, size, assumeNotNull(bid) AS best_bid, assumeNotNull(ask) AS best_ask
  FROM (SELECT *, best_bid AS bid, best_ask AS ask FROM (${events})
        WHERE reason = '' AND kind = ${KIND_CHANGE} AND best_bid IS NOT NULL AND best_ask IS NOT NULL)`;
}

/** A format's events SQL with every column of the exact type the readers expect (events.ts table above). */
export function typedEvents(sql: string): string {
  // A format's SQL gives every row a reason when one of these is NULL: the defaults never reach a table.
  return `SELECT toUInt64(assumeNotNull(n)) AS n, toString(ifNull(asset_id, '')) AS asset_id, toString(ifNull(market, '')) AS market,
    toDateTime64(ifNull(t, 0), 3, 'UTC') AS t, toDateTime64(ifNull(local_t, 0), 6, 'UTC') AS local_t, toUInt8(kind) AS kind, toUInt8(side) AS side,
    toFloat64(ifNull(price, 0)) AS price, toFloat64(ifNull(size, 0)) AS size, CAST(best_bid AS Nullable(Float64)) AS best_bid,
    CAST(best_ask AS Nullable(Float64)) AS best_ask, CAST(fee AS Nullable(UInt16)) AS fee, toString(ifNull(tx, '')) AS tx,
    CAST(bids AS Array(Tuple(Float64, Float64))) AS bids, CAST(asks AS Array(Tuple(Float64, Float64))) AS asks, toString(ifNull(raw, '')) AS raw,
    toString(ifNull(reason, '')) AS reason
  FROM (${sql})`;
}

/**
 * The columns the book pass reads, in the order FoldRowDecoder reads them. `ak` keys the asset with 53
 * bits of its hash (exact in a double; the unit checks they are distinct). `withMarket`: each row carries
 * its market (only when some asset's rows name several; otherwise the asset's one is used).
 */
export function foldColumns(withMarket: boolean): string {
  return [
    'n',
    'bitShiftRight(cityHash64(asset_id), 11) AS ak',
    'kind',
    'side',
    'price',
    'size',
    'best_bid',
    'best_ask',
    'toUnixTimestamp64Milli(t) AS t_ms',
    'toUnixTimestamp64Micro(local_t) AS local_us',
    'fee',
    'tx',
    'bids',
    'asks',
    'raw',
    ...(withMarket ? ['market'] : []),
  ].join(', ');
}

/** One row of the book pass; the decoder reuses the object (levels are fresh arrays on books). */
export interface FoldRow {
  n: number;
  ak: number;
  kind: number;
  side: number;
  price: number;
  size: number;
  /** NaN when the row states none. */
  bestBid: number;
  bestAsk: number;
  t: number;
  localUs: number;
  /** -1 when absent. */
  fee: number;
  tx: string;
  bids: Level[];
  asks: Level[];
  raw: string;
  /** '' unless the stream carries markets. */
  market: string;
}

const NO_LEVELS: Level[] = [];

/** The book pass's rows from the engine's RowBinary, chunk by chunk (see RowBinaryReader). */
export class FoldRowDecoder extends RowBinaryReader {
  readonly row0: FoldRow = {
    n: 0,
    ak: 0,
    kind: 0,
    side: 0,
    price: 0,
    size: 0,
    bestBid: NaN,
    bestAsk: NaN,
    t: 0,
    localUs: 0,
    fee: -1,
    tx: '',
    bids: NO_LEVELS,
    asks: NO_LEVELS,
    raw: '',
    market: '',
  };

  constructor(private readonly withMarket: boolean) {
    super();
  }

  feed(chunk: Buffer): void {
    this.begin(chunk);
  }

  /** The next complete row of the chunk fed, or undefined (a loop, not a generator: this runs per event). */
  read(): FoldRow | undefined {
    return this.next() ? this.row0 : undefined;
  }

  get incomplete(): boolean {
    return this.unfinished;
  }

  protected row(): void {
    const r = this.row0;
    // n, ak, kind, side, price, size: 8 + 8 + 1 + 1 + 8 + 8 bytes.
    this.need(34);
    let p = this.pos;
    r.n = this.uint64(p);
    r.ak = this.uint64(p + 8);
    r.kind = this.buf[p + 16];
    r.side = this.buf[p + 17];
    r.price = this.float64(p + 18);
    r.size = this.float64(p + 26);
    this.pos = p + 34;
    r.bestBid = this.nullableFloat();
    r.bestAsk = this.nullableFloat();
    this.need(16);
    p = this.pos;
    r.t = this.int64(p);
    r.localUs = this.int64(p + 8);
    this.pos = p + 16;
    this.need(1);
    if (this.buf[this.pos++] === 1) r.fee = -1;
    else {
      this.need(2);
      r.fee = this.uint16(this.pos);
      this.pos += 2;
    }
    r.tx = this.string();
    r.bids = this.levels();
    r.asks = this.levels();
    r.raw = this.string();
    r.market = this.withMarket ? this.string() : '';
  }

  private nullableFloat(): number {
    this.need(1);
    if (this.buf[this.pos++] === 1) return NaN;
    this.need(8);
    const v = this.float64(this.pos);
    this.pos += 8;
    return v;
  }
}

/**
 * The hash of a unit's rows (ledger.ts: a later version of a file begins with the same rows, or not):
 * every field of every row the book pass reads, in order, into two independent 32-bit lanes (FNV-style
 * multiplied words, murmur3's finalizer): 64 bits in all, computed here where the rows are decoded anyway
 * (the engine's cityHash64 of each row cost a third of the book pass's read).
 */
export class RowsHash {
  private a = 0x811c9dc5;
  private b = 0x9747b28c;
  private readonly scratch = new Float64Array(1);
  private readonly words = new Uint32Array(this.scratch.buffer);

  add(r: FoldRow): void {
    this.int(r.n);
    this.int(r.ak);
    this.word(r.kind | (r.side << 8));
    this.float(r.price);
    this.float(r.size);
    this.float(r.bestBid);
    this.float(r.bestAsk);
    this.int(r.t);
    this.int(r.localUs);
    this.word(r.fee);
    if (r.tx !== '') this.text(r.tx);
    if (r.raw !== '') this.text(r.raw);
    for (const levels of [r.bids, r.asks]) {
      this.word(levels.length);
      for (const l of levels) {
        this.float(l.price);
        this.float(l.size);
      }
    }
  }

  /** UInt64 as decimal text (the ledger's rows_hash). */
  get value(): string {
    return (BigInt(fmix(this.a) >>> 0) * 4294967296n + BigInt(fmix(this.b) >>> 0)).toString();
  }

  private word(w: number): void {
    this.a = Math.imul(this.a ^ w, 0x01000193);
    this.b = Math.imul(this.b ^ w, 0x5bd1e995) ^ (this.b >>> 15);
  }

  private int(v: number): void {
    this.word(v >>> 0);
    this.word(Math.floor(v / 4294967296));
  }

  private float(v: number): void {
    this.scratch[0] = v;
    this.word(this.words[0]);
    this.word(this.words[1]);
  }

  private text(s: string): void {
    this.word(s.length);
    for (let i = 0; i < s.length; i++) this.word(s.charCodeAt(i));
  }
}

function fmix(h: number): number {
  let x = h ^ (h >>> 16);
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  return x ^ (x >>> 16);
}
