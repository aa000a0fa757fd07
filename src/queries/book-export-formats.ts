import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { BookSide, BookState, Level, OrderBook } from '../book/index.js';
import type { BookRowVisitor } from './book-export.js';

/**
 * The bytes of a book dataset (TIME-MACHINE.md §3) in CSV, JSONL or Parquet. The rows are computed
 * in JS (folded books), so JS formats them; numbers print in shortest round-trip form (String(x)),
 * as the engine prints Float64. Output leaves in chunks of about CHUNK_BYTES, or sooner when rows
 * come slowly (FLUSH_MS), so the first bytes never wait for a full chunk.
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
  const csv = format === 'csv';
  const bids = new SideText('bid', depth, csv);
  const asks = new SideText('ask', depth, csv);
  const line = csv
    ? (time: number, book: OrderBook) => `${time},${book.bestBid()},${book.bestAsk()},${bids.of(book)},${asks.of(book)}\n`
    : (time: number, book: OrderBook) =>
        `{"timestamp":${time},"best_bid":${book.bestBid()},"best_ask":${book.bestAsk()},"bids":[${bids.of(book)}],"asks":[${asks.of(book)}]}\n`;
  return textChunks(rows, line, csv ? bookCsvColumns(depth).join(',') + '\n' : '');
}

/**
 * The text of one side's top levels, remembered: most changes land below the top `depth` levels, so
 * the same level objects come back row after row (OrderBook replaces a level object whenever it
 * changes, never mutates it), and their text is reused instead of formatted again. When the top
 * does change, usually one level is new, or the levels below a new or removed one moved by one
 * place: their text is taken from where they were.
 */
class SideText {
  /** The top levels the text was made of (undefined: absent) and each one's text; two sets, swapped. */
  private levels: (Level | undefined)[];
  private texts: string[];
  private spareLevels: (Level | undefined)[];
  private spareTexts: string[];
  private text = '';

  constructor(
    readonly side: BookSide,
    private readonly depth: number,
    private readonly csv: boolean,
  ) {
    this.levels = new Array<Level | undefined>(depth).fill(undefined);
    this.spareLevels = this.levels.slice();
    this.texts = new Array<string>(depth).fill('');
    this.spareTexts = this.texts.slice();
    this.text = this.join();
  }

  of(book: OrderBook): string {
    const { depth, levels, texts } = this;
    let i = 0;
    while (i < depth && book.level(this.side, i) === levels[i]) i++;
    if (i === depth) return this.text;
    const next = this.spareLevels;
    const nextTexts = this.spareTexts;
    for (i = 0; i < depth; i++) {
      const l = book.level(this.side, i);
      next[i] = l;
      if (l === undefined) nextTexts[i] = '';
      else if (l === levels[i]) nextTexts[i] = texts[i];
      else if (l === levels[i + 1]) nextTexts[i] = texts[i + 1];
      else if (i > 0 && l === levels[i - 1]) nextTexts[i] = texts[i - 1];
      else nextTexts[i] = this.csv ? `${l.price},${l.size}` : `[${l.price},${l.size}]`;
    }
    this.spareLevels = levels;
    this.spareTexts = texts;
    this.levels = next;
    this.texts = nextTexts;
    this.text = this.join();
    return this.text;
  }

  /** CSV: `price,size` pairs, an absent level as two empty fields. JSONL: the present levels. */
  private join(): string {
    let out = '';
    for (let i = 0; i < this.depth; i++) {
      if (this.levels[i] === undefined) {
        if (!this.csv) break;
        out += i === 0 ? ',' : ',,';
      } else {
        out += i === 0 ? this.texts[i] : `,${this.texts[i]}`;
      }
    }
    return out;
  }
}

/**
 * Lines are written straight into a chunk buffer (they are ASCII: numbers and punctuation), not
 * concatenated into a string first: flattening and encoding that string took 15% of the CPU.
 */
async function* textChunks(rows: BookRowSource, line: (time: number, book: OrderBook) => string, header: string): AsyncGenerator<Buffer> {
  let chunk = Buffer.allocUnsafe(2 * CHUNK_BYTES);
  let used = chunk.write(header, 0, 'latin1');
  let flushed = performance.now();
  const take = () => {
    const out = chunk.subarray(0, used);
    chunk = Buffer.allocUnsafe(2 * CHUNK_BYTES);
    used = 0;
    flushed = performance.now();
    return out;
  };
  let pending: Buffer[] = [];
  const add = (time: number, { book }: BookState) => {
    const text = line(time, book);
    if (used + text.length > chunk.length) {
      pending.push(take());
      if (text.length > chunk.length) chunk = Buffer.allocUnsafe(text.length);
    }
    used += chunk.write(text, used, 'latin1');
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

/** Parquet values in a row group: about a million cells whatever the depth, so memory stays flat. */
const GROUP_CELLS = 1 << 20;

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

/** `timestamp` Int64, every other column nullable Float64 (TIME-MACHINE.md §3); absent levels are null. */
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
  const writeGroup = () => {
    const columnData = [
      { name: 'timestamp', data: times.subarray(0, count), statistics: true },
      ...values.map((data, i) => ({ name: names[i + 1], data: data.length === count ? data : data.slice(0, count) })),
    ];
    parquet.write({ columnData, rowGroupSize: count });
    count = 0;
  };
  const startGroup = () => {
    times = new BigInt64Array(groupRows);
    values = names.slice(1).map(() => new Array<number | null>(groupRows));
  };
  startGroup();
  let full = false;
  const add = (time: number, { book }: BookState) => {
    times[count] = BigInt(time);
    values[0][count] = book.bestBid();
    values[1][count] = book.bestAsk();
    let column = 2;
    for (const side of ['bid', 'ask'] as const) {
      for (let i = 0; i < depth; i++, column += 2) {
        const level = book.level(side, i);
        values[column][count] = level ? level.price : null;
        values[column + 1][count] = level ? level.size : null;
      }
    }
    if (++count === groupRows) {
      writeGroup();
      startGroup();
      full = true;
    }
  };
  for await (const _turn of rows(add)) {
    // Row groups leave once the turn that completed them ends.
    if (full) {
      full = false;
      yield* writer.take();
    }
  }
  if (count > 0) writeGroup();
  parquet.finish();
  yield* writer.take();
}
