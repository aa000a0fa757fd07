import { basename } from 'node:path';
import { asyncBufferFromFile, type FileMetaData, parquetMetadataAsync, parquetRead, parquetSchema } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { receiveTimePrefix } from '../receive-time.js';
import type { ImportProblem } from './problems.js';

/**
 * The pmxt archive (docs/INGEST.md §6.2): hourly Parquet files `polymarket_orderbook_YYYY-MM-DDTHH.parquet`,
 * turned back into the market-channel frames they were recorded from, each line stamped with the
 * row's receive time, so the one normalizer makes the rows a live capture of them would have made.
 *
 * v2 (has `event_type`): one row per event and asset with the WebSocket's own fields.
 * v1 (has `update_type` + `data`): `data` is pmxt's reshaped JSON of a book or one price change.
 */

/** Rows decoded per read: a whole 1,048,576-row group at once peaks near 1 GB of RSS, 100k rows near 350 MB (§6.2). */
const SLICE_ROWS = 100_000;

const V2_COLUMNS = new Set([
  'timestamp_received',
  'timestamp',
  'market',
  'event_type',
  'asset_id',
  'bids',
  'asks',
  'price',
  'size',
  'side',
  'best_bid',
  'best_ask',
  'fee_rate_bps',
  'transaction_hash',
  'old_tick_size',
  'new_tick_size',
]);
const V1_COLUMNS = new Set(['timestamp_received', 'timestamp_created_at', 'market_id', 'update_type', 'data']);

/** The UTC hour (Unix ms) a pmxt file name states, or null when the name is not pmxt's. */
export function pmxtHour(path: string): number | null {
  const m = /polymarket_orderbook_(\d{4})-(\d{2})-(\d{2})T(\d{2})\.parquet$/.exec(basename(path));
  if (!m) return null;
  const ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4]);
  return new Date(ms).toISOString().slice(0, 13) === `${m[1]}-${m[2]}-${m[3]}T${m[4]}` ? ms : null;
}

export interface PmxtFile {
  version: 1 | 2;
  rows: number;
  rowGroups: number;
  metadata: FileMetaData;
  /** Decimal columns with their scale: read as unscaled integers, written back as exact text. */
  decimals: Map<string, number>;
}

/** Reads the footer only; throws naming the file when it is not a pmxt Parquet file. */
export async function openPmxt(path: string): Promise<PmxtFile> {
  const file = await asyncBufferFromFile(path);
  let metadata: FileMetaData;
  try {
    metadata = await parquetMetadataAsync(file);
  } catch (err) {
    throw new Error(`not a readable Parquet file (${(err as Error).message})`);
  }
  const names = parquetSchema(metadata).children.map((c) => c.element.name);
  const version = names.includes('event_type') ? 2 : names.includes('update_type') ? 1 : 0;
  if (version === 0) throw new Error(`neither pmxt schema: no event_type (v2) nor update_type (v1) column (columns ${names.join(', ')})`);
  const known = version === 2 ? V2_COLUMNS : V1_COLUMNS;
  const unknown = names.filter((n) => !known.has(n));
  if (unknown.length > 0) throw new Error(`unknown column${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} in a pmxt v${version} file`);
  const decimals = new Map<string, number>();
  for (const el of metadata.schema) {
    const logical = el.logical_type?.type === 'DECIMAL' ? el.logical_type : undefined;
    if (el.converted_type === 'DECIMAL' || logical) {
      decimals.set(el.name, el.scale ?? logical?.scale ?? 0);
      // hyparquet would scale to a float; unannotated it hands over the unscaled integer.
      el.converted_type = undefined;
      el.logical_type = undefined;
    }
  }
  return { version, rows: Number(metadata.num_rows), rowGroups: metadata.row_groups.length, metadata, decimals };
}

/**
 * The file's rows as frame lines, row group by row group in file order (pmxt sorts by market, asset
 * and receive time: each asset's events stay in the order they arrived). A row group that cannot be
 * decoded is reported and skipped; so is a row with a missing or unusable field.
 */
export async function* pmxtLines(
  path: string,
  pmxt: PmxtFile,
  report: (p: ImportProblem) => void,
  onAsset: (asset: string) => void,
  assets?: ReadonlySet<string>,
): AsyncGenerator<string> {
  const file = await asyncBufferFromFile(path);
  let groupStart = 0;
  for (let g = 0; g < pmxt.metadata.row_groups.length; g++) {
    const groupEnd = groupStart + Number(pmxt.metadata.row_groups[g].num_rows);
    for (let start = groupStart; start < groupEnd; start += SLICE_ROWS) {
      let rows: Record<string, unknown>[];
      try {
        rows = await readRows(file, pmxt.metadata, start, Math.min(groupEnd, start + SLICE_ROWS));
      } catch (err) {
        report({ file: path, where: `row group ${g}`, message: `cannot decode (${(err as Error).message}); its rows are skipped` });
        break;
      }
      for (let i = 0; i < rows.length; i++) {
        let line: string | null;
        try {
          line = pmxt.version === 2 ? v2Line(rows[i], pmxt.decimals) : v1Line(rows[i]);
        } catch (err) {
          line = null;
          report({ file: path, where: `row group ${g}, row ${start + i}`, message: (err as Error).message });
        }
        if (line === null) continue;
        const asset = lineAsset(rows[i], pmxt.version);
        if (assets && !assets.has(asset)) continue;
        onAsset(asset);
        yield line;
      }
    }
    groupStart = groupEnd;
  }
}

function readRows(file: Awaited<ReturnType<typeof asyncBufferFromFile>>, metadata: FileMetaData, rowStart: number, rowEnd: number) {
  return new Promise<Record<string, unknown>[]>((resolve, reject) => {
    parquetRead({ file, metadata, rowStart, rowEnd, rowFormat: 'object', compressors, onComplete: resolve }).catch(reject);
  });
}

function lineAsset(row: Record<string, unknown>, version: 1 | 2): string {
  if (version === 2) return String(row.asset_id);
  try {
    return String((JSON.parse(String(row.data)) as { token_id?: unknown }).token_id ?? '');
  } catch {
    return '';
  }
}

/** Unix ms of a TIMESTAMP(MILLIS) cell (a Date from hyparquet). */
function ms(v: unknown, column: string): number {
  const t = v instanceof Date ? v.getTime() : typeof v === 'bigint' ? Number(v) : Number.NaN;
  if (!Number.isSafeInteger(t) || t < 0) throw new Error(`${column}: not a timestamp`);
  return t;
}

/** An unscaled decimal (int, bigint or big-endian two's-complement bytes) as exact text. */
export function decimalText(v: unknown, scale: number): string | null {
  if (v === null || v === undefined) return null;
  let n = 0n;
  if (v instanceof Uint8Array) {
    for (const b of v) n = (n << 8n) | BigInt(b);
    if (v.length > 0 && v[0] & 0x80) n -= 1n << BigInt(8 * v.length);
  } else n = BigInt(v as number | bigint);
  const negative = n < 0n;
  const digits = (negative ? -n : n).toString().padStart(scale + 1, '0');
  const text = scale > 0 ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}`.replace(/\.?0+$/, '') : digits;
  return negative ? `-${text}` : text;
}

const ascii = new TextDecoder('latin1');

function text(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  return v instanceof Uint8Array ? ascii.decode(v) : String(v);
}

/** `[["price","size"],…]` (JSON or Python repr, as v1 wrote it) → the wire's `[{"price","size"},…]`. */
function levelsJson(v: unknown, column: string): string {
  let pairs: unknown = v;
  if (typeof pairs === 'string') {
    try {
      pairs = JSON.parse(pairs.includes("'") ? pairs.replaceAll("'", '"') : pairs);
    } catch {
      throw new Error(`${column}: not a JSON list of [price, size] pairs`);
    }
  }
  if (pairs === null || pairs === undefined) pairs = [];
  if (!Array.isArray(pairs)) throw new Error(`${column}: not a list of [price, size] pairs`);
  let out = '[';
  for (let i = 0; i < pairs.length; i++) {
    const p = pairs[i];
    if (!Array.isArray(p) || p.length !== 2) throw new Error(`${column}: level ${i} is not a [price, size] pair`);
    out += `${i ? ',' : ''}{"price":${JSON.stringify(String(p[0]))},"size":${JSON.stringify(String(p[1]))}}`;
  }
  return `${out}]`;
}

function str(v: string | null): string {
  return JSON.stringify(v ?? '');
}

/** A v2 row as the WebSocket event it records (one asset; `price_change` as a one-item frame). */
function v2Line(r: Record<string, unknown>, decimals: Map<string, number>): string | null {
  const d = (c: string) => decimalText(r[c], decimals.get(c) ?? 0) ?? (typeof r[c] === 'number' ? String(r[c]) : null);
  const received = ms(r.timestamp_received, 'timestamp_received');
  const t = ms(r.timestamp, 'timestamp');
  const head = `${receiveTimePrefix(received * 1000)}{"market":${str(text(r.market))},"timestamp":"${t}"`;
  const asset = str(text(r.asset_id));
  switch (r.event_type) {
    case 'book':
      return `${head},"event_type":"book","asset_id":${asset},"bids":${levelsJson(r.bids, 'bids')},"asks":${levelsJson(r.asks, 'asks')}}`;
    case 'price_change': {
      const best = (c: string) => (d(c) === null ? '' : `,"${c}":"${d(c)}"`);
      const side = str(text(r.side));
      const item = `{"asset_id":${asset},"price":${str(d('price'))},"size":${str(d('size'))},"side":${side}${best('best_bid')}${best('best_ask')}}`;
      return `${head},"event_type":"price_change","price_changes":[${item}]}`;
    }
    case 'last_trade_price': {
      const fee = r.fee_rate_bps === null || r.fee_rate_bps === undefined ? '' : `,"fee_rate_bps":"${Number(r.fee_rate_bps)}"`;
      const hash = r.transaction_hash ? `,"transaction_hash":${str(text(r.transaction_hash))}` : '';
      const trade = `"price":${str(d('price'))},"size":${str(d('size'))},"side":${str(text(r.side))}${fee}${hash}`;
      return `${head},"event_type":"last_trade_price","asset_id":${asset},${trade}}`;
    }
    case 'tick_size_change':
      return (
        `${head},"event_type":"tick_size_change","asset_id":${asset},"old_tick_size":${str(d('old_tick_size'))},` +
        `"new_tick_size":${str(d('new_tick_size'))}}`
      );
    default:
      throw new Error(`event_type ${JSON.stringify(r.event_type)} is none pmxt writes`);
  }
}

/** A v1 row: `received` = timestamp_received, event time = timestamp_created_at (docs/INGEST.md §6.2). */
function v1Line(r: Record<string, unknown>): string | null {
  const received = ms(r.timestamp_received, 'timestamp_received');
  const t = ms(r.timestamp_created_at, 'timestamp_created_at');
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(String(r.data));
  } catch {
    throw new Error('data: not JSON');
  }
  const market = str(text(r.market_id));
  const asset = str(typeof data.token_id === 'string' ? data.token_id : null);
  const head = `${receiveTimePrefix(received * 1000)}{"market":${market},"timestamp":"${t}"`;
  if (r.update_type === 'book_snapshot')
    return `${head},"event_type":"book","asset_id":${asset},"bids":${levelsJson(data.bids, 'data.bids')},"asks":${levelsJson(data.asks, 'data.asks')}}`;
  if (r.update_type === 'price_change') {
    const side = typeof data.change_side === 'string' ? data.change_side.toUpperCase() : null;
    const best = (c: string) => (data[c] === undefined || data[c] === null ? '' : `,"${c}":${str(String(data[c]))}`);
    const price = data.change_price === undefined ? null : String(data.change_price);
    const size = data.change_size === undefined ? null : String(data.change_size);
    const item = `{"asset_id":${asset},"price":${str(price)},"size":${str(size)},"side":${str(side)}${best('best_bid')}${best('best_ask')}}`;
    return `${head},"event_type":"price_change","price_changes":[${item}]}`;
  }
  throw new Error(`update_type ${JSON.stringify(r.update_type)} is none pmxt v1 writes`);
}
