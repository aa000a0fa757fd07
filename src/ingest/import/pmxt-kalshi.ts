import { basename } from 'node:path';
import { asyncBufferFromFile, type FileMetaData, parquetMetadataAsync, parquetSchema, type SchemaTree } from 'hyparquet';
import type { LocalFile } from '../../clickhouse/engine.js';
import { isoMillis } from '../../time.js';
import { KIND_BOOK, KIND_DELTA, SIDE_BUY, SIDE_NONE, SIDE_SELL, typedEvents } from './events.js';
import { engineType, type PmxtFile } from './pmxt.js';

/**
 * pmxt's Kalshi archive (docs/KALSHI.md "pmxt-kalshi import", docs/INGEST.md §6.2): hourly Parquet files
 * `kalshi_orderbook_YYYY-MM-DDTHH.parquet`, one row per WebSocket message of Kalshi's `orderbook_delta`
 * channel (provenance of the schema: test/fixtures/pmxt-kalshi/PROVENANCE.md). The engine reads the file
 * into the events of events.ts, as for pmxt's Polymarket hours (pmxt.ts):
 * - `orderbook_snapshot` → a book: bids = `yes_bids`, asks = 1 − each `no_bids` price (exact in 4 decimals:
 *   Decimal arithmetic, then the nearest Float64), sizes as listed;
 * - `orderbook_delta` → KIND_DELTA: side `yes` → BUY at `price`, `no` → SELL at 1 − `price`, `size` = the
 *   signed `delta`; the book pass (fold.ts) makes it the level's new absolute size.
 * Asset (and market) = `kalshi:<market_ticker>` (src/venues/kalshi/ids.ts). Event time = `timestamp`, or
 * `timestamp_received` where pmxt wrote none (its snapshot rows: Kalshi's snapshot message carries no time);
 * receive time = `timestamp_received`. No row states a best bid and ask: every tick is the book pass's.
 */

export const KALSHI_COLUMNS = [
  'timestamp_received',
  'timestamp',
  'market_ticker',
  'market_id',
  'event_type',
  'side',
  'yes_bids',
  'no_bids',
  'price',
  'delta',
] as const;

const LEVEL_LISTS = ['yes_bids', 'no_bids'];

/** The UTC hour (Unix ms) a pmxt Kalshi file name states, or null when the name is not pmxt's. */
export function pmxtKalshiHour(path: string): number | null {
  const m = /kalshi_orderbook_(\d{4}-\d{2}-\d{2})T(\d{2})\.parquet$/.exec(basename(path));
  return m ? (isoMillis(`${m[1]}T${m[2]}:00:00Z`) ?? null) : null;
}

/** Reads the footer only; throws naming what is wrong when it is not a pmxt Kalshi file. */
export async function openPmxtKalshi(path: string): Promise<PmxtFile> {
  let metadata: FileMetaData;
  try {
    metadata = await parquetMetadataAsync(await asyncBufferFromFile(path));
  } catch (err) {
    throw new Error(`not a readable Parquet file (${(err as Error).message})`);
  }
  const columns = parquetSchema(metadata).children;
  const names = columns.map((c) => c.element.name);
  const unknown = names.filter((n) => !(KALSHI_COLUMNS as readonly string[]).includes(n));
  const missing = KALSHI_COLUMNS.filter((n) => !names.includes(n));
  if (unknown.length > 0 || missing.length > 0) {
    const what = [
      unknown.length > 0 ? `unknown column${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}` : '',
      missing.length > 0 ? `missing column${missing.length > 1 ? 's' : ''} ${missing.join(', ')}` : '',
    ];
    throw new Error(`not a pmxt Kalshi file: ${what.filter(Boolean).join('; ')} (its columns: ${KALSHI_COLUMNS.join(', ')})`);
  }
  // Times must say they are times: a bare integer would be read as seconds, and every event misplaced.
  for (const c of columns) {
    if (!TIME_COLUMNS.includes(c.element.name) || isTimestamp(c.element)) continue;
    throw new Error(`not a pmxt Kalshi file: column ${c.element.name} is ${scalarType(c)}, not a timestamp`);
  }
  return {
    version: 2,
    rows: Number(metadata.num_rows),
    rowGroups: metadata.row_groups.map((g) => Number(g.num_rows)),
    structure: columns.map((c) => `${c.element.name} ${LEVEL_LISTS.includes(c.element.name) ? levelsType(c) : scalarType(c)}`).join(', '),
  };
}

const TIME_COLUMNS = ['timestamp_received', 'timestamp'];

/** A Parquet timestamp column (a logical TIMESTAMP, its older converted types, or INT96). */
function isTimestamp(e: SchemaTree['element']): boolean {
  return e.logical_type?.type === 'TIMESTAMP' || e.converted_type === 'TIMESTAMP_MILLIS' || e.converted_type === 'TIMESTAMP_MICROS' || e.type === 'INT96';
}

function scalarType(c: SchemaTree): string {
  if (c.children.length > 0) throw new Error(`column ${c.element.name} is a group where pmxt Kalshi has a value`);
  return engineType(c.element);
}

/**
 * A ladder column: a Parquet LIST of (price, size) structs (pyarrow names their fields "1" and "2") as the
 * engine's Array(Tuple(price, size)), each field of the type the footer declares.
 */
function levelsType(c: SchemaTree): string {
  let node = c;
  // LIST → repeated group → element struct: down to the node whose children are the two leaf fields.
  while (node.children.length === 1) node = node.children[0];
  const fields = node.children;
  if (fields.length !== 2 || fields.some((f) => f.children.length > 0)) {
    throw new Error(`column ${c.element.name} is not a list of (price, size) pairs`);
  }
  return `Array(Tuple(${fields.map((f) => engineType(f.element)).join(', ')}))`;
}

/** Whether every (price, size) pair of a ladder has a price in [0, 1] and a size ≥ 0. */
const ladderValid = (c: string) => `arrayAll(l -> ifNull(l.1 >= 0 AND l.1 <= 1 AND l.2 >= 0, false), ${c})`;

/** What makes a row unusable, in order: [a condition, the problem it names]. */
const ANY: [string, string][] = [
  [`kind = 0`, `concat('event_type ', toJSONString(ifNull(event_type, '')), ' is neither orderbook_snapshot nor orderbook_delta')`],
  [`ifNull(market_ticker, '') = ''`, `'no market_ticker'`],
  ['timestamp_received IS NULL', `'no timestamp_received'`],
  ['toUnixTimestamp64Milli(t) < 0 OR toUnixTimestamp64Milli(timestamp_received) < 0', `'a time before 1970'`],
];
const DELTA: [string, string][] = [
  [`side_ = ${SIDE_NONE}`, `concat('orderbook_delta side ', toJSONString(ifNull(side, '')), ' is not yes or no')`],
  ['price IS NULL OR price < 0 OR price > 1', `'orderbook_delta without a price in [0, 1]'`],
  ['delta IS NULL', `'orderbook_delta without a delta'`],
];
const SNAPSHOT: [string, string][] = [
  [`NOT ${ladderValid('yes_bids')}`, `'yes_bids: not a list of (price in [0, 1], size ≥ 0)'`],
  [`NOT ${ladderValid('no_bids')}`, `'no_bids: not a list of (price in [0, 1], size ≥ 0)'`],
];

/** The events of a pmxt Kalshi file (events.ts columns), with the reason a row cannot be imported. */
export function pmxtKalshiEventsSql(file: LocalFile): string {
  // 1 − q on the Decimal(·, 4) itself: exact, then converted once to the nearest Float64.
  const one = 'toDecimal32(1, 4)';
  return typedEvents(`
  SELECT n, asset_id, asset_id AS market, t, local_t, kind, side_ AS side, price_ AS price, size_ AS size,
    CAST(NULL AS Nullable(Float64)) AS best_bid, CAST(NULL AS Nullable(Float64)) AS best_ask, CAST(NULL AS Nullable(UInt16)) AS fee, '' AS tx,
    bids_ AS bids, asks_ AS asks, '' AS raw, reason
  FROM (
    SELECT ${file.rowNumber} AS n, if(ifNull(market_ticker, '') = '', '', concat('kalshi:', market_ticker)) AS asset_id,
      toDateTime64(ifNull(timestamp, timestamp_received), 3, 'UTC') AS t, timestamp_received AS local_t,
      multiIf(event_type = 'orderbook_snapshot', ${KIND_BOOK}, event_type = 'orderbook_delta', ${KIND_DELTA}, 0) AS kind,
      multiIf(side = 'yes', ${SIDE_BUY}, side = 'no', ${SIDE_SELL}, ${SIDE_NONE}) AS side_,
      if(kind = ${KIND_DELTA} AND price IS NOT NULL, toFloat64(if(side_ = ${SIDE_SELL}, ${one} - price, price)), 0) AS price_,
      if(kind = ${KIND_DELTA} AND delta IS NOT NULL, toFloat64(delta), 0) AS size_,
      multiIf(
        ${ANY.map(([bad, problem]) => `${bad}, ${problem}`).join(', ')},
        ${DELTA.map(([bad, problem]) => `kind = ${KIND_DELTA} AND (${bad}), ${problem}`).join(', ')},
        ${SNAPSHOT.map(([bad, problem]) => `kind = ${KIND_BOOK} AND (${bad}), ${problem}`).join(', ')},
        '') AS reason,
      if(kind = ${KIND_BOOK} AND reason = '', arrayMap(l -> (toFloat64(assumeNotNull(l.1)), toFloat64(assumeNotNull(l.2))), yes_bids), []) AS bids_,
      if(kind = ${KIND_BOOK} AND reason = '', arrayMap(l -> (toFloat64(${one} - assumeNotNull(l.1)), toFloat64(assumeNotNull(l.2))), no_bids), []) AS asks_
    FROM ${file.table})`);
}
