import { basename } from 'node:path';
import { asyncBufferFromFile, type FileMetaData, parquetMetadataAsync, parquetSchema, type SchemaElement } from 'hyparquet';
import type { LocalFile } from '../../clickhouse/engine.js';
import { isoMillis } from '../../time.js';
import {
  bulkRowsSql,
  KIND_BOOK,
  KIND_CHANGE,
  KIND_TICK_SIZE,
  KIND_TRADE,
  levelsSql,
  levelsValidSql,
  SIDE_BUY,
  SIDE_NONE,
  SIDE_SELL,
  typedEvents,
} from './events.js';

/**
 * The pmxt archive (docs/INGEST.md §6.2): hourly Parquet files `polymarket_orderbook_YYYY-MM-DDTHH.parquet`,
 * read by the engine itself into the events of events.ts, each row one market-channel event of one asset
 * exactly as the WebSocket sent it (the normalizer's reading of the same event, docs/INGEST.md §2).
 *
 * v2 (has `event_type`): one row per event and asset with the WebSocket's own fields.
 * v1 (has `update_type` + `data`): `data` is pmxt's reshaped JSON of a book or one price change.
 */

const V2_COLUMNS = [
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
];
const V1_COLUMNS = ['timestamp_received', 'timestamp_created_at', 'market_id', 'update_type', 'data'];

/** The UTC hour (Unix ms) a pmxt file name states, or null when the name is not pmxt's. */
export function pmxtHour(path: string): number | null {
  const m = /polymarket_orderbook_(\d{4}-\d{2}-\d{2})T(\d{2})\.parquet$/.exec(basename(path));
  return m ? (isoMillis(`${m[1]}T${m[2]}:00:00Z`) ?? null) : null;
}

export interface PmxtFile {
  version: 1 | 2;
  rows: number;
  /** Rows per row group, in file order (problems name the row group of a row). */
  rowGroups: number[];
  /** The file's columns as the engine reads them (its own types, from the footer). */
  structure: string;
}

/** Reads the footer only; throws naming what is wrong when it is not a pmxt Parquet file. */
export async function openPmxt(path: string): Promise<PmxtFile> {
  let metadata: FileMetaData;
  try {
    metadata = await parquetMetadataAsync(await asyncBufferFromFile(path));
  } catch (err) {
    throw new Error(`not a readable Parquet file (${(err as Error).message})`);
  }
  const columns = parquetSchema(metadata).children.map((c) => c.element);
  const names = columns.map((c) => c.name);
  const version = names.includes('event_type') ? 2 : names.includes('update_type') ? 1 : 0;
  if (version === 0) throw new Error(`neither pmxt schema: no event_type (v2) nor update_type (v1) column (columns ${names.join(', ')})`);
  const known = version === 2 ? V2_COLUMNS : V1_COLUMNS;
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length > 0) throw new Error(`unknown column${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} in a pmxt v${version} file`);
  const missing = known.filter((n) => !names.includes(n));
  if (missing.length > 0) throw new Error(`missing column${missing.length > 1 ? 's' : ''} ${missing.join(', ')} of a pmxt v${version} file`);
  return {
    version,
    rows: Number(metadata.num_rows),
    rowGroups: metadata.row_groups.map((g) => Number(g.num_rows)),
    structure: columns.map((c) => `${c.name} ${engineType(c)}`).join(', '),
  };
}

/**
 * The engine's type of a Parquet column as the file declares it: decimals keep their precision and
 * scale (read exactly, then converted to Float64 as the wire's text would parse: docs/INGEST.md §6.2).
 */
export function engineType(c: SchemaElement): string {
  const logical = c.logical_type;
  let type: string | undefined;
  if (logical?.type === 'DECIMAL' || c.converted_type === 'DECIMAL') {
    const precision = (logical?.type === 'DECIMAL' ? logical.precision : c.precision) ?? 18;
    const scale = (logical?.type === 'DECIMAL' ? logical.scale : c.scale) ?? 0;
    type = `Decimal(${precision}, ${scale})`;
  } else if (logical?.type === 'TIMESTAMP' || c.converted_type === 'TIMESTAMP_MILLIS' || c.converted_type === 'TIMESTAMP_MICROS') {
    const unit = logical?.type === 'TIMESTAMP' ? logical.unit : c.converted_type === 'TIMESTAMP_MICROS' ? 'MICROS' : 'MILLIS';
    type = `DateTime64(${unit === 'MILLIS' ? 3 : unit === 'MICROS' ? 6 : 9}, 'UTC')`;
  } else if (c.type === 'BYTE_ARRAY') type = 'String';
  else if (c.type === 'FIXED_LEN_BYTE_ARRAY') type = `FixedString(${c.type_length})`;
  else if (c.type === 'INT32') type = c.converted_type === 'UINT_16' || c.converted_type === 'UINT_8' ? 'UInt16' : 'Int32';
  else if (c.type === 'INT64') type = 'Int64';
  else if (c.type === 'DOUBLE') type = 'Float64';
  else if (c.type === 'FLOAT') type = 'Float32';
  else if (c.type === 'BOOLEAN') type = 'Bool';
  if (type === undefined) throw new Error(`column ${c.name} has a Parquet type tickhouse does not read (${c.type})`);
  return c.repetition_type === 'OPTIONAL' ? `Nullable(${type})` : type;
}

/** "row group g, row r" of a row number (problems name it so). */
export function rowPlace(pmxt: Pick<PmxtFile, 'rowGroups'>, row: number): string {
  let start = 0;
  for (let g = 0; g < pmxt.rowGroups.length; g++) {
    if (row < start + pmxt.rowGroups[g]) return `row group ${g}, row ${row}`;
    start += pmxt.rowGroups[g];
  }
  return `row ${row}`;
}

/** A non-negative number as the wire's text would give it, NULL when absent (a decimal, or JSON text in v1's `data`). */
const jsonNumber = (raw: string) => `toFloat64OrNull(trim(BOTH '"' FROM ${raw}))`;

/** What makes a v2 row unusable, in order: [a condition over the file's columns, the problem it names]. */
const V2_ANY: [string, string][] = [
  [`ifNull(asset_id, '') = ''`, `'no asset_id'`],
  ['timestamp IS NULL OR timestamp_received IS NULL', `'no timestamp or timestamp_received'`],
  ['toUnixTimestamp64Milli(timestamp) < 0 OR toUnixTimestamp64Milli(timestamp_received) < 0', `'a time before 1970'`],
];
const V2_CHANGE: [string, string][] = [
  ['price IS NULL OR size IS NULL OR price < 0 OR size < 0', `'price_change without a price and size ≥ 0'`],
  [`ifNull(side, '') NOT IN ('BUY', 'SELL')`, `concat('price_change side ', toJSONString(ifNull(side, '')), ' is not BUY or SELL')`],
  ['best_bid < 0 OR best_ask < 0', `'a negative best_bid or best_ask'`],
];

/**
 * The price changes of a v2 file that state their best bid and ask and have no problem (the same rules
 * as the events' `reason`): what the engine inserts into ticks alone, read without the rest of the events'
 * work (levels, market events, every row's reason).
 */
function v2BulkSql(file: LocalFile): string {
  const fine = [...V2_ANY, ...V2_CHANGE].map(([bad]) => `NOT ifNull(${bad}, false)`).join(' AND ');
  // Aliases apart from the file's column names (an alias is what a condition's name then means), renamed outside.
  return `
  SELECT n_ AS n, asset_id, market_ AS market, t_ AS t, local_t_ AS local_t, side_ AS side, price_ AS price, size_ AS size, bid_ AS best_bid,
    ask_ AS best_ask
  FROM (
    SELECT toUInt64(assumeNotNull(${file.rowNumber})) AS n_, asset_id, toString(market) AS market_, assumeNotNull(timestamp) AS t_,
      toDateTime64(assumeNotNull(timestamp_received), 6, 'UTC') AS local_t_, if(side = 'BUY', ${SIDE_BUY}, ${SIDE_SELL}) AS side_,
      toFloat64(assumeNotNull(price)) AS price_, toFloat64(assumeNotNull(size)) AS size_, toFloat64(assumeNotNull(best_bid)) AS bid_,
      toFloat64(assumeNotNull(best_ask)) AS ask_
    FROM ${file.table}
    WHERE event_type = 'price_change' AND best_bid IS NOT NULL AND best_ask IS NOT NULL AND ${fine})`;
}

/** The events of a v2 file (events.ts columns), with the reason a row cannot be imported. */
function v2Sql(file: LocalFile): string {
  const pairs = (c: string) => `arrayMap(p -> JSONExtractArrayRaw(p), JSONExtractArrayRaw(ifNull(${c}, '[]')))`;
  const valid = (c: string) => `(${c} IS NULL OR (isValidJSON(${c}) AND JSONType(${c}) = 'Array' AND ${levelsValidSql(pairs(c))}))`;
  return `
  SELECT n, asset_id, market_ AS market, t, local_t, kind, side_ AS side, price_ AS price, size_ AS size, best_bid_ AS best_bid,
    best_ask_ AS best_ask, fee, tx, bids_ AS bids, asks_ AS asks, raw, reason
  FROM (
    SELECT ${file.rowNumber} AS n, asset_id, toString(market) AS market_, timestamp AS t, timestamp_received AS local_t,
      multiIf(event_type = 'price_change', ${KIND_CHANGE}, event_type = 'book', ${KIND_BOOK}, event_type = 'last_trade_price', ${KIND_TRADE},
              event_type = 'tick_size_change', ${KIND_TICK_SIZE}, 0) AS kind,
      multiIf(side = 'BUY', ${SIDE_BUY}, side = 'SELL', ${SIDE_SELL}, ${SIDE_NONE}) AS side_,
      toFloat64(price) AS price_, toFloat64(size) AS size_, toFloat64(best_bid) AS best_bid_, toFloat64(best_ask) AS best_ask_,
      fee_rate_bps AS fee, ifNull(transaction_hash, '') AS tx,
      if(kind = ${KIND_BOOK}, ${valid('bids')}, true) AS bids_ok,
      if(kind = ${KIND_BOOK}, ${valid('asks')}, true) AS asks_ok,
      if(kind = ${KIND_BOOK} AND bids_ok, ${levelsSql(pairs('bids'))}, []) AS bids_,
      if(kind = ${KIND_BOOK} AND asks_ok, ${levelsSql(pairs('asks'))}, []) AS asks_,
      -- A tick size change is stored with its JSON (docs/INGEST.md §5): the event pmxt's row records.
      if(kind = ${KIND_TICK_SIZE}, concat('{"market":', toJSONString(market_), ',"timestamp":"', toString(toUnixTimestamp64Milli(timestamp)),
        '","event_type":"tick_size_change","asset_id":', toJSONString(asset_id), ',"old_tick_size":"', ifNull(toString(old_tick_size), ''),
        '","new_tick_size":"', ifNull(toString(new_tick_size), ''), '"}'), '') AS raw,
      multiIf(
        kind = 0, concat('event_type ', toJSONString(ifNull(event_type, '')), ' is none pmxt writes'),
        ${V2_ANY.map(([bad, problem]) => `${bad}, ${problem}`).join(', ')},
        ${V2_CHANGE.map(([bad, problem]) => `kind = ${KIND_CHANGE} AND (${bad}), ${problem}`).join(', ')},
        NOT bids_ok, 'bids: not a list of [price, size] pairs (numbers ≥ 0)',
        NOT asks_ok, 'asks: not a list of [price, size] pairs (numbers ≥ 0)',
        kind = ${KIND_TRADE} AND (price_ IS NULL OR size_ IS NULL OR price_ < 0 OR size_ < 0), 'last_trade_price without a price and size ≥ 0',
        kind = ${KIND_TICK_SIZE} AND NOT ifNull(new_tick_size > 0 AND ifNull(old_tick_size >= 0, true), false), 'tick_size_change without a new_tick_size > 0',
        '') AS reason
    FROM ${file.table})`;
}

/** The events of a v1 file: `data` is JSON (levels as JSON or Python repr text), event time `timestamp_created_at`. */
function v1Sql(file: LocalFile): string {
  const field = (name: string) => `JSONExtractRaw(data, '${name}')`;
  // Levels: a JSON array, or text holding one (pmxt v1 wrote Python's repr: single quotes).
  const levelsText = (name: string) =>
    `if(JSONType(data, '${name}') = 'String', replaceAll(JSONExtractString(data, '${name}'), '''', '"'), if(JSONHas(data, '${name}'), ${field(name)}, '[]'))`;
  const pairs = (name: string) => `arrayMap(p -> JSONExtractArrayRaw(p), JSONExtractArrayRaw(${levelsText(name)}))`;
  const valid = (name: string) => `(isValidJSON(${levelsText(name)}) AND JSONType(${levelsText(name)}) = 'Array' AND ${levelsValidSql(pairs(name))})`;
  const number = (name: string) => `if(JSONHas(data, '${name}') AND JSONType(data, '${name}') != 'Null', ${jsonNumber(field(name))}, NULL)`;
  return `
  SELECT n, asset_id, market, t, local_t, kind, side, price, size, best_bid, best_ask, CAST(NULL AS Nullable(UInt16)) AS fee, '' AS tx,
    bids_ AS bids, asks_ AS asks, '' AS raw, reason
  FROM (
    SELECT ${file.rowNumber} AS n, isValidJSON(data) AS json, if(json, JSONExtractString(data, 'token_id'), '') AS asset_id, toString(market_id) AS market,
      timestamp_created_at AS t, timestamp_received AS local_t,
      multiIf(update_type = 'price_change', ${KIND_CHANGE}, update_type = 'book_snapshot', ${KIND_BOOK}, 0) AS kind,
      multiIf(upper(JSONExtractString(data, 'change_side')) = 'BUY', ${SIDE_BUY}, upper(JSONExtractString(data, 'change_side')) = 'SELL', ${SIDE_SELL},
              ${SIDE_NONE}) AS side,
      ${number('change_price')} AS price_, ${number('change_size')} AS size_, ifNull(price_, 0) AS price, ifNull(size_, 0) AS size,
      ${number('best_bid')} AS best_bid, ${number('best_ask')} AS best_ask,
      if(json AND kind = ${KIND_BOOK}, ${valid('bids')}, true) AS bids_ok,
      if(json AND kind = ${KIND_BOOK}, ${valid('asks')}, true) AS asks_ok,
      if(json AND kind = ${KIND_BOOK} AND bids_ok, ${levelsSql(pairs('bids'))}, []) AS bids_,
      if(json AND kind = ${KIND_BOOK} AND asks_ok, ${levelsSql(pairs('asks'))}, []) AS asks_,
      multiIf(
        kind = 0, concat('update_type ', toJSONString(update_type), ' is none pmxt v1 writes'),
        NOT json, 'data: not JSON',
        asset_id = '', 'data: no token_id',
        timestamp_created_at IS NULL OR timestamp_received IS NULL, 'no timestamp_created_at or timestamp_received',
        toUnixTimestamp64Milli(timestamp_created_at) < 0 OR toUnixTimestamp64Milli(timestamp_received) < 0, 'a time before 1970',
        kind = ${KIND_CHANGE} AND (price_ IS NULL OR size_ IS NULL OR price_ < 0 OR size_ < 0), 'price_change without a change_price and change_size ≥ 0',
        kind = ${KIND_CHANGE} AND side = ${SIDE_NONE}, 'price_change change_side is not buy or sell',
        kind = ${KIND_CHANGE} AND (ifNull(best_bid < 0, ${number('best_bid')} IS NULL AND JSONHas(data, 'best_bid') AND JSONType(data, 'best_bid') != 'Null')
          OR ifNull(best_ask < 0, ${number('best_ask')} IS NULL AND JSONHas(data, 'best_ask') AND JSONType(data, 'best_ask') != 'Null')),
          'best_bid or best_ask is not a number ≥ 0',
        NOT bids_ok, 'data.bids: not a list of [price, size] pairs (numbers ≥ 0)',
        NOT asks_ok, 'data.asks: not a list of [price, size] pairs (numbers ≥ 0)',
        '') AS reason
    FROM ${file.table})`;
}

/** The file's events (events.ts) as SQL over the engine's view of the file. */
export function pmxtEventsSql(pmxt: PmxtFile, file: LocalFile): string {
  return typedEvents(pmxt.version === 2 ? v2Sql(file) : v1Sql(file));
}

/** The rows the engine inserts into ticks itself (events.ts bulkRowsSql's columns). */
export function pmxtBulkSql(pmxt: PmxtFile, file: LocalFile): string {
  return pmxt.version === 2 ? v2BulkSql(file) : bulkRowsSql(pmxtEventsSql(pmxt, file));
}
