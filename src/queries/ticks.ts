import type { Readable } from 'node:stream';
import type { Engine } from '../clickhouse/engine.js';
import type { TickEvent } from '../clickhouse/rows.js';

/**
 * Ticks of one asset in [start, end], in (t, seq) order: the table's primary key order, so every
 * query below is one contiguous range read that is already sorted (read-in-order, no sort step).
 * The engine formats every byte the client receives; nothing here parses rows.
 */
export interface TickRange {
  asset_id: string;
  /** Unix ms, inclusive. */
  start: number;
  /** Unix ms, inclusive. */
  end: number;
  event_type?: TickEvent;
  /** Opt-in columns appended after the contract's (docs/API.md §4 `fields`), in TICK_FIELDS order. */
  fields?: readonly TickField[];
}

/**
 * The opt-in columns of /v1/ticks and its export, in the order they are appended: the book side a
 * price_change set (`bid`/`ask`), the taker side of a trade (`buy`/`sell`), the receive time (Unix ms,
 * up to 3 decimals) and the stored arrival order. Each is a SQL expression over ticks `k`: the engine
 * formats them like every other column.
 */
export const TICK_FIELDS = ['book_side', 'taker_side', 'local_t', 'seq'] as const;
export type TickField = (typeof TICK_FIELDS)[number];

const FIELD_SQL: Record<TickField, string> = {
  book_side: `multiIf(k.event != 'price_change', '', k.book_side = 'BUY', 'bid', k.book_side = 'SELL', 'ask', '')`,
  taker_side: `multiIf(k.event != 'last_trade_price', '', k.book_side = 'BUY', 'buy', k.book_side = 'SELL', 'sell', '')`,
  // µs / 1000 as Float64: shortest round-trip digits print whole ms without a fraction, µs as 3 decimals.
  local_t: 'toUnixTimestamp64Micro(k.local_t) / 1000',
  seq: 'k.seq',
};

/** `, <expr> AS <name>` for each requested field, in TICK_FIELDS order; '' without fields (the contract's columns only). */
function fieldColumns(fields: readonly TickField[] | undefined): string {
  if (!fields?.length) return '';
  return TICK_FIELDS.filter((f) => fields.includes(f))
    .map((f) => `, ${FIELD_SQL[f]} AS ${f}`)
    .join('');
}

/**
 * Where a page starts: the `skip`-th (0-based) matching tick whose time is `t`. Counting within one
 * millisecond instead of naming the tick's seq lets the page itself tell where the next one starts
 * (see JsonPage): no second query. Ticks of one asset and ms keep their arrival order, so the count
 * is stable.
 */
export interface TickPosition {
  t: number;
  skip: number;
}

/** The table is aliased and qualified everywhere so the output alias `t` (ms) never shadows the column. */
function where(range: TickRange, from?: TickPosition): string {
  let sql = `k.asset_id = {asset_id:String}
  AND k.t >= fromUnixTimestamp64Milli({start:Int64}, 'UTC')
  AND k.t <= fromUnixTimestamp64Milli({end:Int64}, 'UTC')`;
  if (range.event_type) sql += `\n  AND k.event = {event_type:String}`;
  // The primary key skips everything before the cursor's ms; OFFSET skips the page's first ticks
  // inside that ms.
  if (from) sql += `\n  AND k.t >= fromUnixTimestamp64Milli({from_t:Int64}, 'UTC')`;
  return sql;
}

function params(range: TickRange, from?: TickPosition): Record<string, unknown> {
  const p: Record<string, unknown> = { asset_id: range.asset_id, start: range.start, end: range.end };
  if (range.event_type) p.event_type = range.event_type;
  if (from) p.from_t = from.t;
  return p;
}

const JSON_COLUMNS = `toUnixTimestamp64Milli(k.t) AS t, k.event AS event, k.side AS side,
  k.best_bid AS best_bid, k.best_ask AS best_ask, k.price AS price, k.size AS size`;

/**
 * Every range read merges the asset's parts in key order (one or more per month). Without buffering
 * each part ahead of that merge, a 6 M-tick export measured ~0.2 s to first chunk and ~200 MB of
 * engine memory instead of ~0.6 s and ~600 MB, at the same throughput (chDB 26.7); 16k-row blocks
 * make the first chunk leave sooner.
 */
const READ_SETTINGS = 'read_in_order_use_buffering = 0, max_block_size = 16384';

/** A statement for Engine.stream: SQL, the engine's output format and the bound values. */
export interface StreamQuery {
  sql: string;
  format: string;
  params: Record<string, unknown>;
}

/**
 * One page as JSON lines (one object per line), plus the first tick of the next page when there is
 * one: JsonPage turns the lines into the array and reads where the next page starts off that extra
 * line. The engine's own array mode (output_format_json_array_of_rows) is not used: chDB formats
 * every streamed chunk as a separate result, so each chunk would carry its own brackets.
 */
export function pageQuery(range: TickRange, limit: number, from?: TickPosition): StreamQuery {
  return {
    sql: `SELECT ${JSON_COLUMNS}${fieldColumns(range.fields)}
FROM ticks AS k
WHERE ${where(range, from)}
ORDER BY k.t, k.seq
LIMIT {fetch:UInt32} OFFSET {skip:UInt64}
SETTINGS ${READ_SETTINGS}`,
    format: 'JSONEachRow',
    params: { ...params(range, from), fetch: limit + 1, skip: from?.skip ?? 0 },
  };
}

export function streamTicksPage(engine: Engine, range: TickRange, limit: number, from: TickPosition | undefined, signal?: AbortSignal): Readable {
  const q = pageQuery(range, limit, from);
  return engine.stream(q.sql, q.format, { params: q.params, signal });
}

export type ExportFormat = 'csv' | 'jsonl' | 'parquet';

export const CSV_HEADER = 'timestamp,event_type,side,best_bid,best_ask,price,size\n';

/** The CSV header with the requested opt-in fields appended (CSV_HEADER without any). */
export function csvHeader(fields: readonly TickField[] | undefined): string {
  const extra = TICK_FIELDS.filter((f) => fields?.includes(f));
  return extra.length ? `${CSV_HEADER.trimEnd()},${extra.join(',')}\n` : CSV_HEADER;
}

/** `side` is free text (outcome labels): quoted per RFC 4180 only when it holds , " or a line break. */
const CSV_SIDE = `if(match(k.side, '[,"\\r\\n]'), concat('"', replaceAll(k.side, '"', '""'), '"'), k.side)`;

const EXPORTS: Record<ExportFormat, { format: string; sql: (where: string, fields: string) => string }> = {
  // CustomSeparated with the Raw rule prints values unquoted (CSV would quote every string); only
  // `side` can need quoting, done above. The header is CSV_HEADER, written before the engine's bytes:
  // chDB formats every streamed chunk as a separate result, so a WithNames header would repeat.
  csv: {
    format: 'CustomSeparated',
    sql: (w, f) => `SELECT toUnixTimestamp64Milli(k.t) AS timestamp, k.event AS event_type, ${CSV_SIDE} AS side,
  k.best_bid AS best_bid, k.best_ask AS best_ask, k.price AS price, k.size AS size${f}
FROM ticks AS k
WHERE ${w}
ORDER BY k.t, k.seq
-- Raw fields, comma between fields, one line per row.
SETTINGS format_custom_escaping_rule = 'Raw', format_custom_field_delimiter = ',', format_custom_row_after_delimiter = '\\n', ${READ_SETTINGS}`,
  },
  jsonl: {
    format: 'JSONEachRow',
    sql: (w, f) => `SELECT ${JSON_COLUMNS}${f}
FROM ticks AS k
WHERE ${w}
ORDER BY k.t, k.seq
SETTINGS ${READ_SETTINGS}`,
  },
  // Same members as JSONL; event and side as plain strings (an Enum8 would be written as Int8).
  parquet: {
    format: 'Parquet',
    sql: (w, f) => `SELECT toUnixTimestamp64Milli(k.t) AS t, toString(k.event) AS event, toString(k.side) AS side,
  k.best_bid AS best_bid, k.best_ask AS best_ask, k.price AS price, k.size AS size${f}
FROM ticks AS k
WHERE ${w}
ORDER BY k.t, k.seq
SETTINGS ${READ_SETTINGS}`,
  },
};

/** Every tick of the range in the export format. */
export function exportQuery(range: TickRange, format: ExportFormat): StreamQuery {
  const spec = EXPORTS[format];
  return { sql: spec.sql(where(range), fieldColumns(range.fields)), format: spec.format, params: params(range) };
}

/**
 * Turns the JSONEachRow bytes of pageQuery into the members of a JSON array, in place, counting rows
 * and keeping the extra (limit + 1)-th row out of the page. JSON strings escape line breaks and
 * quotes, so a raw \n always ends a row and `{"t":` always starts one. The work is per chunk (a
 * native byte search); only the page's trailing run of equal timestamps is ever read row by row.
 * Works on any chunking (a row may span chunks).
 */
export class JsonPage {
  /** Rows in the page. */
  count = 0;
  /** The previous chunk ended a row: a comma is owed if another row follows. */
  private owed = false;
  /** Bytes of the extra row, once the page is full. */
  private extra: Buffer[] | null = null;
  /** The page's last bytes, back to (at least) the last change of timestamp. */
  private tail: Buffer[] = [];

  constructor(
    private readonly limit: number,
    private readonly from: TickPosition | undefined,
  ) {}

  map(chunk: Buffer): Buffer {
    if (chunk.length === 0) return chunk;
    if (this.extra) {
      this.extra.push(chunk);
      return EMPTY;
    }
    let out = chunk;
    for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, i + 1)) {
      if (++this.count === this.limit) {
        this.extra = [chunk.subarray(i + 1)];
        out = chunk.subarray(0, i);
        break;
      }
      chunk[i] = COMMA;
    }
    if (!this.extra && out.length) {
      const endsRow = out[out.length - 1] === COMMA;
      if (endsRow) out = out.subarray(0, out.length - 1);
      if (this.owed) out = Buffer.concat([COMMA_BYTES, out]);
      this.owed = endsRow;
    } else if (this.owed) {
      out = Buffer.concat([COMMA_BYTES, out]);
      this.owed = false;
    }
    if (out.length) this.tail = changesTimestamp(out) ? [out] : [...this.tail, out];
    return out;
  }

  /** Where the next page starts (after the stream ended), or null when this page holds the last tick. */
  next(): TickPosition | null {
    if (!this.extra) return null;
    const t = timestampAt(Buffer.concat(this.extra), 0);
    if (t === null) return null;
    // Ticks of time t already in this page, plus those the previous pages skipped in the same ms.
    const tail = Buffer.concat(this.tail);
    let run = 0;
    for (let at = tail.lastIndexOf(ROW_START); at !== -1 && timestampAt(tail, at) === t; at = at ? tail.lastIndexOf(ROW_START, at - 1) : -1) run++;
    return { t, skip: run + (this.from && this.from.t === t ? this.from.skip : 0) };
  }
}

const NEWLINE = 0x0a;
const COMMA = 0x2c;
const COMMA_BYTES = Buffer.from(',');
const EMPTY = Buffer.alloc(0);
const ROW_START = Buffer.from('{"t":');

/** The `t` of the row starting at `at`, or null when its digits are cut off by the end of `buf`. */
function timestampAt(buf: Buffer, at: number): number | null {
  let t = 0;
  for (let i = at + ROW_START.length; i < buf.length; i++) {
    const c = buf[i];
    if (c === COMMA) return t;
    t = t * 10 + (c - 0x30);
  }
  return null;
}

/** True when `piece` holds two complete row starts with different times: the trailing run begins inside it. */
function changesTimestamp(piece: Buffer): boolean {
  let last: number | null = null;
  for (let at = piece.lastIndexOf(ROW_START); at !== -1; at = at ? piece.lastIndexOf(ROW_START, at - 1) : -1) {
    const t = timestampAt(piece, at);
    if (t === null) continue;
    if (last === null) last = t;
    else if (t !== last) return true;
  }
  return false;
}
