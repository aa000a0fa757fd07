import { basename } from 'node:path';
import { splitLines } from '../../clickhouse/lines.js';
import { receiveTimePrefix } from '../receive-time.js';
import type { ImportProblem } from './problems.js';
import { openDecompressed } from './sources.js';

/**
 * Tardis CSV (docs/INGEST.md §6.3; format: docs.tardis.dev "Downloadable CSV files"): a day's
 * `incremental_book_L2` and `trades` of one symbol (for Polymarket the asset id), merged by
 * `local_timestamp` and turned back into market-channel frames stamped with that receive time:
 * a run of snapshot rows is a `book`, a run of update rows a `price_change`, a trade a
 * `last_trade_price`. Times are µs; event times become ms (Polymarket's precision).
 */

export const BOOK_HEADER = 'exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount';
export const TRADES_HEADER = 'exchange,symbol,timestamp,local_timestamp,id,side,price,amount';

export type TardisKind = 'incremental_book_L2' | 'trades';

/** tardis-dev's file name: `{exchange}_{data_type}_{YYYY-MM-DD}_{symbol}.csv[.gz]`. */
const NAME = /^([a-z0-9-]+)_(incremental_book_L2|trades)_(\d{4}-\d{2}-\d{2})_(.+?)\.csv(\.gz|\.zst)?$/;

export interface TardisName {
  kind: TardisKind;
  /** 00:00 UTC of the file's day, ms. */
  day: number;
  /** Files of the same day and symbol share it. */
  key: string;
}

export function tardisName(path: string): TardisName | null {
  const m = NAME.exec(basename(path));
  if (!m) return null;
  const day = Date.parse(`${m[3]}T00:00:00Z`);
  if (!Number.isFinite(day)) return null;
  return { kind: m[2] as TardisKind, day, key: `${m[1]}_${m[3]}_${m[4]}` };
}

interface Row {
  /** local_timestamp, µs. */
  local: number;
  line: number;
  fields: string[];
}

/** A file's data rows; a row of the wrong shape is reported and skipped. */
async function* rows(path: string, kind: TardisKind, report: (p: ImportProblem) => void): AsyncGenerator<Row> {
  const { chunks } = await openDecompressed(path);
  let lineNo = 0;
  const header = kind === 'trades' ? TRADES_HEADER : BOOK_HEADER;
  for await (const text of splitLines(chunks)) {
    lineNo++;
    if (lineNo === 1) {
      if (text !== header) throw new Error(`line 1: header is not Tardis ${kind}'s (expected "${header}")`);
      continue;
    }
    if (text === '') continue;
    const fields = text.split(',');
    const local = Number(fields[3]);
    const bad = badField(fields, kind);
    if (bad) {
      report({ file: path, where: `line ${lineNo}`, message: bad });
      continue;
    }
    yield { local, line: lineNo, fields };
  }
}

const DECIMAL = /^\d+(\.\d+)?$/;

function badField(f: string[], kind: TardisKind): string | null {
  if (f.length !== 8) return `${f.length} fields, expected 8`;
  if (f[1] === '') return 'empty symbol';
  if (!/^\d+$/.test(f[2]) || !/^\d+$/.test(f[3])) return 'timestamp and local_timestamp must be integer µs';
  if (kind === 'incremental_book_L2') {
    if (f[4] !== 'true' && f[4] !== 'false') return `is_snapshot "${f[4]}" is not true or false`;
    if (f[5] !== 'bid' && f[5] !== 'ask') return `side "${f[5]}" is not bid or ask`;
  } else if (f[5] !== 'buy' && f[5] !== 'sell' && f[5] !== 'unknown') return `side "${f[5]}" is not buy, sell or unknown`;
  if (!DECIMAL.test(f[6]) || !DECIMAL.test(f[7])) return 'price and amount must be plain decimals';
  return null;
}

/** Event time: µs → ms (Polymarket's precision; a tickhouse export writes whole ms). */
function eventMs(us: string): number {
  return Math.floor(Number(us) / 1000);
}

/**
 * Frame lines of one day and symbol: book and trade files merged by local_timestamp (book rows
 * first at equal times), each run of book rows with the same local_timestamp, timestamp and kind one frame.
 */
export async function* tardisLines(
  files: { path: string; kind: TardisKind }[],
  marketOf: ReadonlyMap<string, string>,
  report: (p: ImportProblem) => void,
  onAsset: (asset: string) => void,
  assets?: ReadonlySet<string>,
): AsyncGenerator<string> {
  const book = files.find((f) => f.kind === 'incremental_book_L2');
  const trades = files.find((f) => f.kind === 'trades');
  const b = book ? rows(book.path, 'incremental_book_L2', report)[Symbol.asyncIterator]() : null;
  const t = trades ? rows(trades.path, 'trades', report)[Symbol.asyncIterator]() : null;
  let nb = b ? await b.next() : null;
  let nt = t ? await t.next() : null;
  let group: Row[] = [];
  const flushGroup = (): string | null => {
    if (group.length === 0) return null;
    const line = bookFrame(group, marketOf);
    group = [];
    return line;
  };
  while ((nb && !nb.done) || (nt && !nt.done)) {
    const takeBook = nb && !nb.done && (!nt || nt.done || nb.value.local <= nt.value.local);
    if (takeBook && nb && !nb.done) {
      const r = nb.value;
      const asset = r.fields[1];
      if (!assets || assets.has(asset)) {
        const g = group[0];
        if (g && (g.local !== r.local || g.fields[2] !== r.fields[2] || g.fields[4] !== r.fields[4] || g.fields[1] !== asset)) {
          const line = flushGroup();
          if (line) yield line;
        }
        onAsset(asset);
        group.push(r);
      }
      nb = await b!.next();
    } else if (nt && !nt.done) {
      const line = flushGroup();
      if (line) yield line;
      const f = nt.value.fields;
      if (!assets || assets.has(f[1])) {
        onAsset(f[1]);
        yield tradeFrame(nt.value, marketOf);
      }
      nt = await t!.next();
    }
  }
  const line = flushGroup();
  if (line) yield line;
}

function bookFrame(group: Row[], marketOf: ReadonlyMap<string, string>): string {
  const f0 = group[0].fields;
  const asset = f0[1];
  const head = `${receiveTimePrefix(group[0].local)}{"market":${JSON.stringify(marketOf.get(asset) ?? '')},"timestamp":"${eventMs(f0[2])}"`;
  if (f0[4] === 'true') {
    let bids = '';
    let asks = '';
    for (const r of group) {
      const level = `{"price":"${r.fields[6]}","size":"${r.fields[7]}"}`;
      if (r.fields[5] === 'bid') bids += `${bids ? ',' : ''}${level}`;
      else asks += `${asks ? ',' : ''}${level}`;
    }
    return `${head},"event_type":"book","asset_id":${JSON.stringify(asset)},"bids":[${bids}],"asks":[${asks}]}`;
  }
  let changes = '';
  for (const r of group) {
    const side = r.fields[5] === 'bid' ? 'BUY' : 'SELL';
    changes += `${changes ? ',' : ''}{"asset_id":${JSON.stringify(asset)},"price":"${r.fields[6]}","size":"${r.fields[7]}","side":"${side}"}`;
  }
  return `${head},"event_type":"price_change","price_changes":[${changes}]}`;
}

function tradeFrame(r: Row, marketOf: ReadonlyMap<string, string>): string {
  const f = r.fields;
  const side = f[5] === 'buy' ? 'BUY' : f[5] === 'sell' ? 'SELL' : '';
  // Polymarket trades carry no id of their own; an on-chain transaction hash is kept as one.
  const hash = f[4].startsWith('0x') ? `,"transaction_hash":${JSON.stringify(f[4])}` : '';
  return (
    `${receiveTimePrefix(r.local)}{"market":${JSON.stringify(marketOf.get(f[1]) ?? '')},"timestamp":"${eventMs(f[2])}","event_type":"last_trade_price",` +
    `"asset_id":${JSON.stringify(f[1])},"price":"${f[6]}","size":"${f[7]}","side":"${side}"${hash}}`
  );
}
