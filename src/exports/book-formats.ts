import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { BookState, Level, OrderBook } from '../book/index.js';
import type { BookRowVisitor } from '../book-history/dataset-rows.js';
import { nextTurn } from '../event-loop.js';
import { MAX_NUMBER_BYTES, writeInteger, writeNumber } from '../number-text.js';
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

/** Runs the dataset's read, handing each row to `visit`; yields once per turn (book-export.ts). */
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
 * passed); a row starts only where the chunk has room for the longest row the depth allows.
 */
async function* textChunks(rows: BookRowSource, line: LineWriter, depth: number, header: string): AsyncGenerator<Buffer> {
  // Every number at its longest, with its punctuation; the JSON keys take less than 64 bytes.
  const rowBytes = (4 * depth + 3) * (MAX_NUMBER_BYTES + 3) + 64;
  const size = CHUNK_BYTES + rowBytes;
  let chunk = Buffer.allocUnsafe(size);
  let used = chunk.write(header, 0, 'latin1');
  let flushed = performance.now();
  const take = () => {
    const out = chunk.subarray(0, used);
    // A new chunk, never a recycled one: SideText reads the previous row's bytes where they were written.
    chunk = Buffer.allocUnsafe(size);
    used = 0;
    flushed = performance.now();
    return out;
  };
  let pending: Buffer[] = [];
  const add = (time: number, { book }: BookState) => {
    if (used + rowBytes > size) pending.push(take());
    used = line(chunk, used, time, book);
  };
  for await (const _turn of rows(add)) {
    if (used >= CHUNK_BYTES || (used > 0 && performance.now() - flushed >= FLUSH_MS)) pending.push(take());
    if (pending.length) {
      yield* pending;
      pending = [];
    }
  }
  // The CSV header alone, or nothing (JSONL), when there are no rows: the empty file of the format.
  yield* pending;
  if (used > 0) yield take();
}

/**
 * Parquet values in a row group: about 130,000 cells whatever the depth, so memory stays flat. The
 * writer encodes a row group in one synchronous call (~40 ms for this many cells here; a million
 * took ~300 ms, which held every other request of the process that long).
 */
const GROUP_CELLS = 1 << 17;

/**
 * A ByteWriter whose bytes leave after every row group: the parquet writer keeps only offsets and
 * the footer's metadata (a few bytes per column chunk), never the file.
 */
class ChunkWriter extends ByteWriter {
  private ready: Buffer[] = [];

  flush(): void {
    if (this.index === 0) return;
    this.ready.push(Buffer.from(this.buffer.slice(0, this.index)));
    this.index = 0;
  }

  override finish(): void {
    this.flush();
  }

  take(): Buffer[] {
    const out = this.ready;
    this.ready = [];
    return out;
  }
}

/** `timestamp` Int64, every other column nullable Float64 (docs/TIME-MACHINE.md §3); absent levels are null. */
async function* parquetChunks(rows: BookRowSource, depth: number): AsyncGenerator<Buffer> {
  const names = bookCsvColumns(depth);
  const writer = new ChunkWriter();
  // Statistics on the timestamp column only: readers skip row groups by time; per-level min/max
  // would cost a third of the encoding time and serve no one.
  const parquet = new ParquetWriter({
    writer,
    statistics: false,
    schema: [
      { name: 'root', num_children: names.length },
      { name: 'timestamp', type: 'INT64', repetition_type: 'REQUIRED' },
      ...names.slice(1).map((name) => ({ name, type: 'DOUBLE' as const, repetition_type: 'OPTIONAL' as const })),
    ],
  });
  const groupRows = Math.max(1, Math.floor(GROUP_CELLS / names.length));
  let times = new BigInt64Array(groupRows);
  let values: (number | null)[][] = [];
  let count = 0;
  /** Row groups filled during a turn of the fold, encoded after it, one per turn of the event loop. */
  const full: { times: BigInt64Array; values: (number | null)[][]; count: number }[] = [];
  const writeGroup = (group: { times: BigInt64Array; values: (number | null)[][]; count: number }) => {
    const columnData = [
      { name: 'timestamp', data: group.times.subarray(0, group.count), statistics: true },
      ...group.values.map((data, i) => ({ name: names[i + 1], data: data.length === group.count ? data : data.slice(0, group.count) })),
    ];
    parquet.write({ columnData, rowGroupSize: group.count });
  };
  const startGroup = () => {
    times = new BigInt64Array(groupRows);
    values = names.slice(1).map(() => new Array<number | null>(groupRows));
    count = 0;
  };
  startGroup();
  const add = (time: number, { book }: BookState) => {
    times[count] = BigInt(time);
    values[0][count] = book.bestBid();
    values[1][count] = book.bestAsk();
    let column = 2;
    for (const levels of [book.side('bid'), book.side('ask')]) {
      for (let i = 0; i < depth; i++, column += 2) {
        const level = levels[i];
        values[column][count] = level ? level.price : null;
        values[column + 1][count] = level ? level.size : null;
      }
    }
    if (++count === groupRows) {
      full.push({ times, values, count });
      startGroup();
    }
  };
  // Row groups leave once the turn that completed them ends (the last rows may come after the last
  // turn); each is one synchronous encode, so the event loop gets a turn between two of them.
  async function* fullGroups() {
    for (let group = full.shift(); group; group = full.shift()) {
      writeGroup(group);
      yield* writer.take();
      if (full.length) await nextTurn();
    }
  }
  for await (const _turn of rows(add)) yield* fullGroups();
  yield* fullGroups();
  if (count > 0) writeGroup({ times, values, count });
  parquet.finish();
  yield* writer.take();
}
