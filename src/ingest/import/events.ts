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

export const SIDE_NONE = 0;
export const SIDE_BUY = 1;
export const SIDE_SELL = 2;

/** Whether `[price, size]` pairs (arrays of JSON texts) all hold two numbers ≥ 0. */
export function levelsValidSql(pairs: string): string {
  return `arrayAll(p -> length(p) = 2 AND ifNull(toFloat64OrNull(trim(BOTH '"' FROM p[1])) >= 0 AND toFloat64OrNull(trim(BOTH '"' FROM p[2])) >= 0, false), ${pairs})`;
}

/** `[price, size]` pairs as the engine's Array(Tuple(Float64, Float64)) (valid ones: levelsValidSql). */
export function levelsSql(pairs: string): string {
  return `arrayMap(p -> (toFloat64OrZero(trim(BOTH '"' FROM p[1])), toFloat64OrZero(trim(BOTH '"' FROM p[2]))), ${pairs})`;
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
 * A row's hash (ledger.ts: a later version of the file begins with the same rows). The asset enters as its
 * key `ak` (computed for the book pass anyway), the market not at all: it is the asset's.
 */
export const ROW_HASH =
  'cityHash64((n, bitShiftRight(cityHash64(asset_id), 11), t, local_t, kind, side, price, size, best_bid, best_ask, fee, tx, bids, asks, raw))';

/**
 * The columns the book pass reads, in the order FoldRowDecoder reads them. `ak` keys the asset with 53
 * bits of its hash (exact in a double; the unit checks they are distinct); `h` hashes the row, so a
 * later version of the file can be checked to begin with the same rows (ledger.ts). `withMarket`: each
 * row carries its market (only when some asset's rows name several; otherwise the asset's one is used).
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
    `${ROW_HASH} AS h`,
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
  /** The row hash as two 32-bit halves. */
  hashLo: number;
  hashHi: number;
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
    hashLo: 0,
    hashHi: 0,
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
    this.need(24);
    p = this.pos;
    r.t = this.int64(p);
    r.localUs = this.int64(p + 8);
    r.hashLo = this.uint32(p + 16);
    r.hashHi = this.uint32(p + 20);
    this.pos = p + 24;
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
