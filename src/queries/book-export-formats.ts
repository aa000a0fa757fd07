import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { BookSide, Level, OrderBook } from '../book/index.js';
import type { BookRow } from './book-export.js';

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

export function encodeBookRows(rows: AsyncIterable<BookRow>, format: BookExportFormat, depth: number): AsyncGenerator<Buffer> {
  if (format === 'parquet') return parquetChunks(rows, depth);
  const csv = format === 'csv';
  const bids = new SideText('bid', depth, csv);
  const asks = new SideText('ask', depth, csv);
  const line = csv
    ? ({ time, state: { book } }: BookRow) => `${time},${book.bestBid()},${book.bestAsk()},${bids.of(book)},${asks.of(book)}\n`
    : ({ time, state: { book } }: BookRow) =>
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

async function* textChunks(rows: AsyncIterable<BookRow>, line: (row: BookRow) => string, header: string): AsyncGenerator<Buffer> {
  let text = header;
  let flushed = performance.now();
  for await (const row of rows) {
    text += line(row);
    if (text.length >= CHUNK_BYTES || performance.now() - flushed >= FLUSH_MS) {
      yield Buffer.from(text);
      text = '';
      flushed = performance.now();
    }
  }
  // The CSV header alone, or nothing (JSONL), when there are no rows: the empty file of the format.
  if (text || header) yield Buffer.from(text);
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
async function* parquetChunks(rows: AsyncIterable<BookRow>, depth: number): AsyncGenerator<Buffer> {
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
  for await (const { time, state: { book } } of rows) {
    times[count] = BigInt(time);
    values[0][count] = book.bestBid();
    values[1][count] = book.bestAsk();
    let column = 2;
    for (const side of ['bid', 'ask'] as const) {
      const levels = book.levels(side, depth);
      for (let i = 0; i < depth; i++, column += 2) {
        values[column][count] = i < levels.length ? levels[i].price : null;
        values[column + 1][count] = i < levels.length ? levels[i].size : null;
      }
    }
    if (++count === groupRows) {
      writeGroup();
      startGroup();
      yield* writer.take();
    }
  }
  if (count > 0) writeGroup();
  parquet.finish();
  yield* writer.take();
}
