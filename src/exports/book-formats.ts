import type { BookState, Level, OrderBook } from '../book/index.js';
import type { BookRowVisitor } from '../book-history/dataset-rows.js';
import { MAX_NUMBER_BYTES, writeInteger, writeNumber } from '../number-text.js';
import { ParquetFile } from './parquet-file.js';
import { NO_SEPARATOR, SideText } from './side-text.js';

/**
 * The bytes of a book dataset (docs/TIME-MACHINE.md §3) in CSV, JSONL or Parquet. The rows are computed
 * in JS (folded books), so JS formats them; numbers print in shortest round-trip form (String(x), by
 * writeNumber), as the engine prints Float64. Output leaves in chunks of about CHUNK_BYTES, or sooner
 * when rows come slowly (FLUSH_MS), so the first bytes never wait for a full chunk.
 */
export type BookExportFormat = 'csv' | 'jsonl' | 'parquet';

const CHUNK_BYTES = 64 * 1024;
const FLUSH_MS = 50;

/** `timestamp,best_bid,best_ask,bid_price_0,bid_size_0,…,ask_price_{d-1},ask_size_{d-1}`. */
export function bookCsvColumns(depth: number): string[] {
  const columns = ['timestamp', 'best_bid', 'best_ask'];
  for (const side of ['bid', 'ask']) for (let i = 0; i < depth; i++) columns.push(`${side}_price_${i}`, `${side}_size_${i}`);
  return columns;
}

/** Runs the dataset's read, handing each row to `visit`; yields once per turn, and after a row whose visit returned true. */
export type BookRowSource = (visit: BookRowVisitor) => AsyncGenerator<void>;

export function encodeBookRows(rows: BookRowSource, format: BookExportFormat, depth: number): AsyncGenerator<Buffer> {
  if (format === 'parquet') return parquetChunks(rows, depth);
  return format === 'csv' ? textChunks(rows, csvLine(depth), depth, `${bookCsvColumns(depth).join(',')}\n`) : textChunks(rows, jsonLine(depth), depth, '');
}

/**
 * Writes one row at `pos` of a buffer with room for it (rowBytes) and returns the position after it.
 * Rows are written byte by byte, numbers included (writeNumber): no string is made per row, and a
 * side's levels the previous row had are copied from its bytes (SideText).
 */
type LineWriter = (buf: Buffer, pos: number, time: number, book: OrderBook) => number;

const COMMA = 44;
const NEWLINE = 10;

/** `time,best_bid,best_ask` then per side and level `,price,size`, an absent level `,,`. */
function csvLine(depth: number): LineWriter {
  const bids = new SideText(depth, csvLevel, NO_SEPARATOR);
  const asks = new SideText(depth, csvLevel, NO_SEPARATOR);
  return (buf, pos, time, book) => {
    pos = writeInteger(buf, pos, time);
    buf[pos++] = COMMA;
    pos = writeNumber(buf, pos, book.bestBid());
    buf[pos++] = COMMA;
    pos = writeNumber(buf, pos, book.bestAsk());
    pos = csvSide(buf, pos, bids, book.side('bid'), depth);
    pos = csvSide(buf, pos, asks, book.side('ask'), depth);
    buf[pos++] = NEWLINE;
    return pos;
  };
}

/** `,price,size` for each of a side's first `depth` levels, `,,` for each absent one. */
function csvSide(buf: Buffer, pos: number, text: SideText, levels: readonly Level[], depth: number): number {
  pos = text.write(buf, pos, levels);
  for (let i = levels.length; i < depth; i++) {
    buf[pos++] = COMMA;
    buf[pos++] = COMMA;
  }
  return pos;
}

/** `,price,size`. */
function csvLevel(buf: Buffer, pos: number, level: Level): number {
  buf[pos++] = COMMA;
  pos = writeNumber(buf, pos, level.price);
  buf[pos++] = COMMA;
  return writeNumber(buf, pos, level.size);
}

const JSON_TIMESTAMP = Buffer.from('{"timestamp":', 'latin1');
const JSON_BEST_BID = Buffer.from(',"best_bid":', 'latin1');
const JSON_BEST_ASK = Buffer.from(',"best_ask":', 'latin1');
const JSON_BIDS = Buffer.from(',"bids":[', 'latin1');
const JSON_ASKS = Buffer.from('],"asks":[', 'latin1');
const JSON_END = Buffer.from(']}\n', 'latin1');

/** `{"timestamp":…,"best_bid":…,"best_ask":…,"bids":[[price,size],…],"asks":[…]}`: the present levels only. */
function jsonLine(depth: number): LineWriter {
  const bids = new SideText(depth, jsonLevel, COMMA);
  const asks = new SideText(depth, jsonLevel, COMMA);
  return (buf, pos, time, book) => {
    pos = put(buf, pos, JSON_TIMESTAMP);
    pos = writeInteger(buf, pos, time);
    pos = put(buf, pos, JSON_BEST_BID);
    pos = writeNumber(buf, pos, book.bestBid());
    pos = put(buf, pos, JSON_BEST_ASK);
    pos = writeNumber(buf, pos, book.bestAsk());
    pos = put(buf, pos, JSON_BIDS);
    pos = bids.write(buf, pos, book.side('bid'));
    pos = put(buf, pos, JSON_ASKS);
    pos = asks.write(buf, pos, book.side('ask'));
    return put(buf, pos, JSON_END);
  };
}

/** `[price,size]`; the side's levels are comma-separated (SideText). */
function jsonLevel(buf: Buffer, pos: number, level: Level): number {
  buf[pos++] = 91; // '['
  pos = writeNumber(buf, pos, level.price);
  buf[pos++] = COMMA;
  pos = writeNumber(buf, pos, level.size);
  buf[pos++] = 93; // ']'
  return pos;
}

function put(buf: Buffer, pos: number, bytes: Buffer): number {
  buf.set(bytes, pos);
  return pos + bytes.length;
}

/**
 * Rows are written straight into a chunk buffer, which leaves once it holds CHUNK_BYTES (or FLUSH_MS
 * passed); a row starts only where the chunk has room for the longest row the depth allows. A full
 * chunk asks the fold for a turn (the visitor returns true), so it leaves before the next row is
 * made: what waits for a stalled reader is one chunk, whatever the depth (issue 35; a turn of the fold
 * was 4,096 rows, 13 MB at depth 100).
 */
async function* textChunks(rows: BookRowSource, line: LineWriter, depth: number, header: string): AsyncGenerator<Buffer> {
  // Every number at its longest, with its punctuation; the JSON keys take less than 64 bytes.
  const rowBytes = (4 * depth + 3) * (MAX_NUMBER_BYTES + 3) + 64;
  const size = CHUNK_BYTES + rowBytes;
  let chunk = Buffer.allocUnsafe(size);
  let used = chunk.write(header, 0, 'latin1');
  let flushed = performance.now();
  // Full chunks not yet handed over: one, as the fold turns after each (a list, so no row is ever lost).
  let ready: Buffer[] = [];
  const take = () => {
    const out = chunk.subarray(0, used);
    // A new chunk, never a recycled one: SideText reads the previous row's bytes where they were written.
    chunk = Buffer.allocUnsafe(size);
    used = 0;
    flushed = performance.now();
    return out;
  };
  const add = (time: number, { book }: BookState) => {
    used = line(chunk, used, time, book);
    if (used + rowBytes <= size) return;
    ready.push(take());
    return true;
  };
  for await (const _turn of rows(add)) {
    if (ready.length) {
      yield* ready;
      ready = [];
    }
    if (used >= CHUNK_BYTES || (used > 0 && performance.now() - flushed >= FLUSH_MS)) yield take();
  }
  // The CSV header alone, or nothing (JSONL), when there are no rows: the empty file of the format.
  yield* ready;
  if (used > 0) yield take();
}

/**
 * Parquet values in a row group: about 130,000 cells whatever the depth, so memory stays flat (and the
 * files' row groups are what they were: ParquetFile writes the same bytes).
 */
const GROUP_CELLS = 1 << 17;

/**
 * Column chunks (row groups × columns) a Parquet book export may hold. The footer lists them all (~50
 * bytes each, kept until the file ends: parquet-file.ts), so it bounds what one export holds at its
 * end (~13 MB) and keeps the footer readable (pyarrow reads footers up to 100 MB, lists of up to a
 * million entries). At depth 100 (403 columns, 325 rows a group): ~211,000 rows; at depth 25:
 * ~3.2 million; at depth 1: ~700 million.
 */
export const PARQUET_MAX_COLUMN_CHUNKS = 1 << 18;

/** The most rows a Parquet book export of `depth` levels can hold (whole row groups). */
export function parquetMaxRows(depth: number): number {
  const columns = bookCsvColumns(depth).length;
  return Math.floor(PARQUET_MAX_COLUMN_CHUNKS / columns) * groupRowsOf(columns);
}

const groupRowsOf = (columns: number) => Math.max(1, Math.floor(GROUP_CELLS / columns));

/**
 * `timestamp` Int64, every other column nullable Float64 (docs/TIME-MACHINE.md §3); absent levels are
 * null. A row group is filled, then encoded and sent before the next one is filled (the visitor asks
 * the fold for a turn once the group is full): a stalled reader holds one group's values and its bytes.
 */
async function* parquetChunks(rows: BookRowSource, depth: number): AsyncGenerator<Buffer> {
  const names = bookCsvColumns(depth);
  // Statistics on the timestamp column only: readers skip row groups by time; per-level min/max
  // would cost a third of the encoding time and serve no one.
  const file = new ParquetFile(
    [
      { name: 'root', num_children: names.length },
      { name: 'timestamp', type: 'INT64', repetition_type: 'REQUIRED' },
      ...names.slice(1).map((name) => ({ name, type: 'DOUBLE' as const, repetition_type: 'OPTIONAL' as const })),
    ],
    PARQUET_MAX_COLUMN_CHUNKS,
  );
  yield* file.start();
  const groupRows = groupRowsOf(names.length);
  const times = new BigInt64Array(groupRows);
  // Values as doubles, NaN for an absent level (no price or size is NaN; ParquetFile writes it as null).
  const values = names.slice(1).map(() => new Float64Array(groupRows));
  let count = 0;
  const encode = async () => {
    const columns = [
      { name: 'timestamp', data: times.subarray(0, count), statistics: true },
      ...values.map((column, i) => ({ name: names[i + 1], data: column.subarray(0, count) })),
    ];
    const bytes = await file.writeGroup(columns, count);
    count = 0;
    return bytes;
  };
  const add = (time: number, { book }: BookState) => {
    times[count] = BigInt(time);
    values[0][count] = book.bestBid();
    values[1][count] = book.bestAsk();
    let column = 2;
    for (const levels of [book.side('bid'), book.side('ask')]) {
      for (let i = 0; i < depth; i++, column += 2) {
        const level = levels[i];
        values[column][count] = level ? level.price : Number.NaN;
        values[column + 1][count] = level ? level.size : Number.NaN;
      }
    }
    if (++count === groupRows) return true;
  };
  for await (const _turn of rows(add)) if (count === groupRows) yield* await encode();
  if (count > 0) yield* await encode();
  yield* file.finish();
}
