import type { Readable } from 'node:stream';
import type { Engine } from '../clickhouse/engine.js';
import type { TickEvent } from '../ingest/rows.js';

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
}

/** Where a page starts: the (t, seq) of its first tick. */
export interface TickPosition {
  t: number;
  seq: number;
}

/** The table is aliased and qualified everywhere so the output alias `t` (ms) never shadows the column. */
function where(range: TickRange, from?: TickPosition): string {
  let sql = `k.asset_id = {asset_id:String}
  AND k.t >= fromUnixTimestamp64Milli({start:Int64}, 'UTC')
  AND k.t <= fromUnixTimestamp64Milli({end:Int64}, 'UTC')`;
  if (range.event_type) sql += `\n  AND k.event = {event_type:String}`;
  // The plain `t >=` lets the primary key skip everything before the cursor; the tuple then starts
  // exactly at its row inside a run of equal timestamps.
  if (from) sql += `\n  AND k.t >= fromUnixTimestamp64Milli({from_t:Int64}, 'UTC') AND (k.t, k.seq) >= (fromUnixTimestamp64Milli({from_t:Int64}, 'UTC'), {from_seq:UInt64})`;
  return sql;
}

function params(range: TickRange, from?: TickPosition): Record<string, unknown> {
  const p: Record<string, unknown> = { asset_id: range.asset_id, start: range.start, end: range.end };
  if (range.event_type) p.event_type = range.event_type;
  if (from) Object.assign(p, { from_t: from.t, from_seq: from.seq });
  return p;
}

const JSON_COLUMNS = `toUnixTimestamp64Milli(k.t) AS t, k.event AS event, k.side AS side,
  k.best_bid AS best_bid, k.best_ask AS best_ask, k.price AS price, k.size AS size`;

/** ms and seq are Int64/UInt64: JSON numbers, not the quoted strings ClickHouse prints by default; and
 * `/` in outcome labels printed as is, as JSON.stringify and most encoders do. */
const JSON_SETTINGS = 'output_format_json_quote_64bit_integers = 0, output_format_json_escape_forward_slashes = 0';

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
 * One page as JSON lines (one object per line); JsonLinesToArray turns them into the array. The
 * engine's own array mode (output_format_json_array_of_rows) is not used: chDB formats every streamed
 * chunk as a separate result, so each chunk would carry its own brackets.
 */
export function pageQuery(range: TickRange, limit: number, from?: TickPosition): StreamQuery {
  return {
    sql: `SELECT ${JSON_COLUMNS}
FROM ticks AS k
WHERE ${where(range, from)}
ORDER BY k.t, k.seq
LIMIT {limit:UInt32}
SETTINGS ${JSON_SETTINGS}, ${READ_SETTINGS}`,
    format: 'JSONEachRow',
    params: { ...params(range, from), limit },
  };
}

export function streamTicksPage(engine: Engine, range: TickRange, limit: number, from: TickPosition | undefined, signal?: AbortSignal): Readable {
  const q = pageQuery(range, limit, from);
  return engine.stream(q.sql, q.format, { params: q.params, signal });
}

/** The first tick after a page of `limit` ticks: where the next page starts, or null when none. */
export async function nextPagePosition(engine: Engine, range: TickRange, limit: number, from: TickPosition | undefined, signal?: AbortSignal): Promise<TickPosition | null> {
  const rows = await engine.rows<{ t: number; seq: number }>(
    `SELECT toUnixTimestamp64Milli(k.t) AS t, k.seq AS seq
FROM ticks AS k
WHERE ${where(range, from)}
ORDER BY k.t, k.seq
LIMIT 1 OFFSET {limit:UInt32}
SETTINGS ${JSON_SETTINGS}, ${READ_SETTINGS}`,
    { params: { ...params(range, from), limit }, signal },
  );
  return rows.length ? { t: Number(rows[0].t), seq: Number(rows[0].seq) } : null;
}

export type ExportFormat = 'csv' | 'jsonl' | 'parquet';

export const CSV_HEADER = 'timestamp,event_type,side,best_bid,best_ask,price,size\n';

/** `side` is free text (outcome labels): quoted per RFC 4180 only when it holds , " or a line break. */
const CSV_SIDE = `if(match(k.side, '[,"\\r\\n]'), concat('"', replaceAll(k.side, '"', '""'), '"'), k.side)`;

const EXPORTS: Record<ExportFormat, { format: string; sql: (where: string) => string }> = {
  // CustomSeparated with the Raw rule prints values unquoted (CSV would quote every string); only
  // `side` can need quoting, done above. The header is CSV_HEADER, written before the engine's bytes:
  // chDB formats every streamed chunk as a separate result, so a WithNames header would repeat.
  csv: {
    format: 'CustomSeparated',
    sql: (w) => `SELECT toUnixTimestamp64Milli(k.t) AS timestamp, k.event AS event_type, ${CSV_SIDE} AS side,
  k.best_bid AS best_bid, k.best_ask AS best_ask, k.price AS price, k.size AS size
FROM ticks AS k
WHERE ${w}
ORDER BY k.t, k.seq
-- Raw fields, comma between fields, one line per row.
SETTINGS format_custom_escaping_rule = 'Raw', format_custom_field_delimiter = ',', format_custom_row_after_delimiter = '\\n', ${READ_SETTINGS}`,
  },
  jsonl: {
    format: 'JSONEachRow',
    sql: (w) => `SELECT ${JSON_COLUMNS}
FROM ticks AS k
WHERE ${w}
ORDER BY k.t, k.seq
SETTINGS ${JSON_SETTINGS}, ${READ_SETTINGS}`,
  },
  // Same members as JSONL; event and side as plain strings (an Enum8 would be written as Int8).
  parquet: {
    format: 'Parquet',
    sql: (w) => `SELECT toUnixTimestamp64Milli(k.t) AS t, toString(k.event) AS event, toString(k.side) AS side,
  k.best_bid AS best_bid, k.best_ask AS best_ask, k.price AS price, k.size AS size
FROM ticks AS k
WHERE ${w}
ORDER BY k.t, k.seq
SETTINGS ${READ_SETTINGS}`,
  },
};

/** Every tick of the range in the export format. */
export function exportQuery(range: TickRange, format: ExportFormat): StreamQuery {
  const spec = EXPORTS[format];
  return { sql: spec.sql(where(range)), format: spec.format, params: params(range) };
}

export function streamTicksExport(engine: Engine, range: TickRange, format: ExportFormat, signal?: AbortSignal): Readable {
  const q = exportQuery(range, format);
  return engine.stream(q.sql, q.format, { params: q.params, signal });
}

/**
 * Turns JSONEachRow bytes into the members of a JSON array, in place, and counts the rows. JSON
 * strings escape line breaks, so every raw \n ends a row: it becomes the comma before the next row,
 * and the one after the last row is dropped. Works on any chunking (a row may span chunks).
 */
export class JsonLinesToArray {
  count = 0;
  /** The previous chunk ended a row: a comma is owed if another row follows. */
  private owed = false;

  map(chunk: Buffer): Buffer {
    if (chunk.length === 0) return chunk;
    for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, i + 1)) {
      chunk[i] = COMMA;
      this.count++;
    }
    const endsRow = chunk[chunk.length - 1] === COMMA;
    const body = endsRow ? chunk.subarray(0, chunk.length - 1) : chunk;
    const out = this.owed ? Buffer.concat([COMMA_BYTES, body]) : body;
    this.owed = endsRow;
    return out;
  }
}

const NEWLINE = 0x0a;
const COMMA = 0x2c;
const COMMA_BYTES = Buffer.from(',');
