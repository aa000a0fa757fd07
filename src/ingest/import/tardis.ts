import { basename } from 'node:path';
import type { LocalFile } from '../../clickhouse/engine.js';
import { isoMillis } from '../../time.js';
import { KIND_BOOK, KIND_CHANGE, KIND_DAY_SNAPSHOT, KIND_TRADE, SIDE_BUY, SIDE_NONE, SIDE_SELL } from './events.js';

/**
 * Tardis CSV (docs/INGEST.md §6.3; format: docs.tardis.dev "Downloadable CSV files"): a day's
 * `incremental_book_L2` and `trades` of one symbol (for Polymarket the asset id), read by the engine and
 * merged by `local_timestamp` (book rows first at equal times) into the events of events.ts: a run of
 * snapshot rows with the same times is a `book`, an update row a price change, a trade a trade. Times are
 * µs; event times become ms (Polymarket's precision).
 */

export const BOOK_HEADER = 'exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount';
export const TRADES_HEADER = 'exchange,symbol,timestamp,local_timestamp,id,side,price,amount';

export type TardisKind = 'incremental_book_L2' | 'trades';

/** tardis-dev's file name: `{exchange}_{data_type}_{YYYY-MM-DD}_{symbol}.csv[.gz]`. */
const NAME = /^([a-z0-9-]+)_([A-Za-z0-9_]+?)_(\d{4}-\d{2}-\d{2})_(.+?)\.csv(\.gz|\.zst)?$/;
const IMPORTED: readonly string[] = ['incremental_book_L2', 'trades'];
/** Tardis's data types that are derived from these two (or not market-channel data): skipped with a note. */
const DERIVED = /^(book_snapshot_\d+|quotes|book_ticker|derivative_ticker|liquidations|options_chain)$/;

export interface TardisName {
  /** The data type; `kind` is set only for the two imported ones. */
  type: string;
  kind?: TardisKind;
  /** 00:00 UTC of the file's day, ms. */
  day: number;
  exchange: string;
  symbol: string;
  /** A file of Tardis's grouped symbols (e.g. PREDICTIONS: every symbol's rows in one file). */
  grouped: boolean;
}

export function tardisName(path: string): TardisName | null {
  const m = NAME.exec(basename(path));
  if (!m) return null;
  const day = isoMillis(m[3]);
  if (day === undefined) return null;
  if (!IMPORTED.includes(m[2]) && !DERIVED.test(m[2])) return null;
  const kind = IMPORTED.includes(m[2]) ? (m[2] as TardisKind) : undefined;
  return { type: m[2], kind, day, exchange: m[1], symbol: m[4], grouped: /^[A-Z]+$/.test(m[4]) };
}

export function isDerivedTardisType(type: string): boolean {
  return DERIVED.test(type);
}

/** One file a unit reads: its path and, for a grouped file, the symbol its rows are taken for. */
export interface TardisSource {
  path: string;
  kind: TardisKind;
  /** Only rows of this symbol (a grouped file); undefined: every row. */
  symbol?: string;
}

/** `src` of the merged order: book rows come first at equal receive times. */
const SRC: Record<TardisKind, number> = { incremental_book_L2: 0, trades: 1 };

/**
 * A file's rows as parsed fields with the `problem` that makes a row unusable (the messages of docs/INGEST.md §6.5),
 * line numbers 1-based as in the file (line 1, the header, is checked before).
 */
function rowsSql(source: TardisSource, file: LocalFile, param: string): string {
  const kind = source.kind;
  const sideRule =
    kind === 'trades'
      ? `f[6] NOT IN ('buy', 'sell', 'unknown'), concat('side "', f[6], '" is not buy, sell or unknown'),`
      : `f[5] NOT IN ('true', 'false'), concat('is_snapshot "', f[5], '" is not true or false'),
         f[6] NOT IN ('bid', 'ask'), concat('side "', f[6], '" is not bid or ask'),`;
  return `
    SELECT ${SRC[kind]} AS src, line, f,
      multiIf(length(f) != 8, concat(toString(length(f)), ' fields, expected 8'),
              f[2] = '', 'empty symbol',
              NOT match(f[3], '^[0-9]+$') OR NOT match(f[4], '^[0-9]+$'), 'timestamp and local_timestamp must be integer µs',
              ${sideRule}
              NOT match(f[7], '^[0-9]+([.][0-9]+)?$') OR NOT match(f[8], '^[0-9]+([.][0-9]+)?$'), 'price and amount must be plain decimals',
              '') AS problem
    FROM (SELECT ${file.rowNumber} + 1 AS line, splitByChar(',', trim(TRAILING '\\r' FROM text)) AS f FROM ${file.table}
          WHERE ${file.rowNumber} > 0 AND text != '' ${source.symbol !== undefined ? `AND f[2] = {${param}:String}` : ''})`;
}

/**
 * INSERT … SELECT of a unit's files into its stage table (events.ts columns, plus `src` and `line` for
 * problems), `n` numbering the merged order. `dayStart` µs: a snapshot received at that instant is
 * Tardis's own book at 00:00, not the exchange's.
 */
export function tardisStageSql(stage: string, sources: { source: TardisSource; file: LocalFile; param: string }[], dayStartUs: number): string {
  const book = sources.find((s) => s.source.kind === 'incremental_book_L2');
  const trades = sources.find((s) => s.source.kind === 'trades');
  const parts: string[] = [];
  // The OrZero conversions: the engine may compute a column before the filter that drops the bad rows.
  const ms = (us: string) => `fromUnixTimestamp64Milli(intDiv(toInt64OrZero(${us}), 1000), 'UTC')`;
  const micro = (us: string) => `fromUnixTimestamp64Micro(toInt64OrZero(${us}), 'UTC')`;
  const num = (text: string) => `toFloat64OrZero(${text})`;
  const level = `tuple(${num('r.3')}, ${num('r.4')})`;
  if (book) {
    const rows = rowsSql(book.source, book.file, book.param);
    // Update rows: each a price change.
    parts.push(`
      SELECT src, line, f[2] AS asset_id, ${ms('f[3]')} AS t, ${micro('f[4]')} AS local_t, ${KIND_CHANGE} AS kind,
        if(f[6] = 'bid', ${SIDE_BUY}, ${SIDE_SELL}) AS side, ${num('f[7]')} AS price, ${num('f[8]')} AS size,
        CAST([] AS Array(Tuple(Float64, Float64))) AS bids, CAST([] AS Array(Tuple(Float64, Float64))) AS asks, '' AS tx, '' AS reason
      FROM (${rows}) WHERE problem = '' AND f[5] = 'false'`);
    // Snapshot rows with the same symbol and times: one book, its levels in file order.
    parts.push(`
      SELECT src, first_line AS line, asset_id, t, local_t, kind, side, price, size, bids, asks, tx, reason FROM (
        SELECT 0 AS src, min(line) AS first_line, asset_id, ${ms('ts')} AS t, ${micro('local')} AS local_t,
          if(toInt64OrZero(local) = ${dayStartUs}, ${KIND_DAY_SNAPSHOT}, ${KIND_BOOK}) AS kind, ${SIDE_NONE} AS side, 0 AS price, 0 AS size,
          arrayMap(r -> ${level}, arrayFilter(r -> r.2 = 'bid', arraySort(groupArray((line, f[6], f[7], f[8]))))) AS bids,
          arrayMap(r -> ${level}, arrayFilter(r -> r.2 = 'ask', arraySort(groupArray((line, f[6], f[7], f[8]))))) AS asks, '' AS tx, '' AS reason
        FROM (SELECT *, f[2] AS asset_id, f[4] AS local, f[3] AS ts FROM (${rows}) WHERE problem = '' AND f[5] = 'true')
        GROUP BY asset_id, local, ts)`);
    parts.push(badRows(rows));
  }
  if (trades) {
    const rows = rowsSql(trades.source, trades.file, trades.param);
    parts.push(`
      SELECT src, line, f[2] AS asset_id, ${ms('f[3]')} AS t, ${micro('f[4]')} AS local_t, ${KIND_TRADE} AS kind,
        multiIf(f[6] = 'buy', ${SIDE_BUY}, f[6] = 'sell', ${SIDE_SELL}, ${SIDE_NONE}) AS side, ${num('f[7]')} AS price, ${num('f[8]')} AS size,
        CAST([] AS Array(Tuple(Float64, Float64))) AS bids, CAST([] AS Array(Tuple(Float64, Float64))) AS asks,
        -- Polymarket trades carry no id of their own; an on-chain transaction hash is kept as one.
        if(startsWith(f[5], '0x'), f[5], '') AS tx, '' AS reason
      FROM (${rows}) WHERE problem = ''`);
    parts.push(badRows(rows));
  }
  return `
  INSERT INTO ${stage} (src, line, asset_id, market, t, local_t, kind, side, price, size, best_bid, best_ask, fee, tx, bids, asks, raw, reason)
  SELECT src, line, asset_id, '', t, local_t, kind, side, price, size, NULL, NULL, NULL, tx, bids, asks, '', reason
  FROM (${parts.join('\nUNION ALL\n')})`;
}

/** Rows with a problem, kept in the stage for problems() (local_t 0 sorts them first; kind 0 keeps them out of the book pass). */
function badRows(rows: string): string {
  return `
      SELECT src, line, '' AS asset_id, toDateTime64(0, 3, 'UTC') AS t, toDateTime64(0, 6, 'UTC') AS local_t, 0 AS kind, ${SIDE_NONE} AS side,
        0 AS price, 0 AS size, CAST([] AS Array(Tuple(Float64, Float64))) AS bids, CAST([] AS Array(Tuple(Float64, Float64))) AS asks, '' AS tx,
        problem AS reason
      FROM (${rows}) WHERE problem != ''`;
}

/** How the engine reads a CSV file: one String per line. */
export const LINES_STRUCTURE = 'text String';

/**
 * The stage table of a Tardis unit (events.ts columns but `n`; `src`/`line` say where a row came from),
 * kept in the merged order: each insert block is sorted alone and parts are merged as they are read
 * (tardisEventsSql), so no step sorts the whole day in memory.
 */
export function tardisStageTable(name: string): string {
  return `CREATE TABLE ${name} (src UInt8, line UInt64, asset_id String, market String, t DateTime64(3, 'UTC'), local_t DateTime64(6, 'UTC'),
    kind UInt8, side UInt8, price Float64, size Float64, best_bid Nullable(Float64), best_ask Nullable(Float64), fee Nullable(UInt16), tx String,
    bids Array(Tuple(Float64, Float64)), asks Array(Tuple(Float64, Float64)), raw String, reason String) ENGINE = MergeTree ORDER BY (local_t, src, line)`;
}

/**
 * The staging insert in small blocks: lines are read 16,384 at a time and parts written every 131,072
 * rows (measured on a 1.5 M-row day: peak RSS 790 MB, against 1,190 MB with the defaults, at the same speed).
 */
export const TARDIS_STAGE_SETTINGS = ['max_block_size = 16384', 'max_insert_block_size = 131072', 'min_insert_block_size_rows = 131072'];

/**
 * A staged unit's events, `n` numbering the merged order (receive time, book rows before trades, line):
 * the parts read in their sorting key's order (a streaming merge) on one thread, numbered as they come.
 * Filters of a query over it apply after the numbering (the engine does not move a filter below a
 * stateful function such as rowNumberInAllBlocks).
 */
export function tardisEventsSql(stage: string): string {
  return `SELECT rowNumberInAllBlocks() AS n, * FROM (SELECT * FROM ${stage} ORDER BY local_t, src, line)`;
}
