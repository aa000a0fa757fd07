import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * A realistic import input (issue 36): one hour of the whole venue as pmxt v2 publishes it, and the
 * same events of its busiest token as a Tardis day and as receive-stamped frame lines, so the three
 * formats can be imported side by side and their books compared. Deterministic (the same options give
 * the same files) and built once per option set under `<root>/archive-v<N>-<rows>-<tokens>[-<append>]/`.
 *
 * The pmxt file has pmxt v2's 16 columns and types (archive.pmxt.dev/docs/v2-data-overview), ZSTD(9),
 * row groups of 1,048,576 rows, rows sorted by (market, asset_id, timestamp_received). Per token:
 * - a `book` first, then one every 1,000 events; a trade every 1,500; a tick size change in one token
 *   of a thousand and in the busy one; everything else `price_change` (99.7 % of the rows at the default size);
 * - 10 bid and 10 ask levels on a cent grid around the token's mid; change j sets level j mod 20 (size
 *   0 removes it), so the book after any event is known in closed form: later books list exactly what
 *   the changes before them left (drift checks verify), except one in 25, which misstates a level
 *   (drift checks catch it); price changes state the best bid and ask after them (one in 2,000 not);
 * - one busy token holds 5 % of the rows (Tardis's "one busy token"); the others' counts follow u³.
 * `append` rows (0 by default) are added at the end of the file, after the sorted rows: later events of
 * one token in seven, as a re-published hour that grew would hold them.
 */
export const ARCHIVE_VERSION = 2;
/** The hour of the generated file. */
export const ARCHIVE_HOUR = Date.UTC(2026, 8, 1, 12);
const HOUR_NAME = '2026-09-01T12';
const DAY_NAME = '2026-09-01';

export interface ArchiveOptions {
  rows: number;
  tokens: number;
  /** Rows appended at the end of the file (a grown re-publication of the hour). */
  append?: number;
  /** Also write every token's frames (small files, for tests), not only the busy token's. */
  allFrames?: boolean;
}

export interface ArchiveHour {
  version: number;
  dir: string;
  /** polymarket_orderbook_2026-09-01T12.parquet */
  pmxt: string;
  /** The busy token's Tardis day: incremental_book_L2 and trades (.csv.gz, tardis-dev names). */
  tardis: string[];
  /** The busy token's events as receive-stamped frame lines (docs/INGEST.md §3). */
  frames: string;
  /** Every token's events as frame lines, when asked (allFrames). */
  allFrames: string | null;
  busyAsset: string;
  rows: number;
  tokens: number;
  busyRows: number;
  events: Record<string, number>;
  bytes: number;
  buildSeconds: number;
}

/** Sizes from the environment: BENCH_IMPORT_ROWS (default 30,000,000) and BENCH_IMPORT_TOKENS (default 40,000). */
export function archiveOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): ArchiveOptions {
  const rows = Number(env.BENCH_IMPORT_ROWS ?? 30_000_000);
  const tokens = Number(env.BENCH_IMPORT_TOKENS ?? 40_000);
  if (!(Number.isSafeInteger(rows) && rows >= 1000 && Number.isSafeInteger(tokens) && tokens >= 2 && tokens * 4 <= rows)) {
    throw new Error('BENCH_IMPORT_ROWS must be an integer ≥ 1000 and BENCH_IMPORT_TOKENS an integer from 2 to a quarter of it');
  }
  return { rows, tokens };
}

export function archiveDir(root: string, o: ArchiveOptions): string {
  return join(root, `archive-v${ARCHIVE_VERSION}-${o.rows}-${o.tokens}${o.append ? `-${o.append}` : ''}${o.allFrames ? '-all' : ''}`);
}

/** The files for these options, built (in a child process: one chDB directory per process) unless cached. */
export async function ensureArchiveHour(root: string, o: ArchiveOptions, log: (line: string) => void = () => {}): Promise<ArchiveHour> {
  const dir = archiveDir(root, o);
  const info = join(dir, 'archive.json');
  if (existsSync(info)) return JSON.parse(readFileSync(info, 'utf8')) as ArchiveHour;
  const build = `${dir}.build`;
  rmSync(build, { recursive: true, force: true });
  mkdirSync(build, { recursive: true });
  log(`generating a pmxt hour of ${o.rows.toLocaleString('en-US')} rows over ${o.tokens.toLocaleString('en-US')} tokens in ${dir} (once; cached)`);
  const args = [new URL(import.meta.url).pathname, build, JSON.stringify(o)];
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  if (code !== 0) throw new Error(`archive generation failed (exit ${code})`);
  const built = JSON.parse(out.trim().split('\n').at(-1)!) as ArchiveHour;
  rmSync(dir, { recursive: true, force: true });
  renameSync(build, dir);
  const hour: ArchiveHour = {
    ...built,
    dir,
    pmxt: built.pmxt.replace(build, dir),
    tardis: built.tardis.map((f) => f.replace(build, dir)),
    frames: built.frames.replace(build, dir),
    allFrames: built.allFrames?.replace(build, dir) ?? null,
  };
  writeFileSync(info, JSON.stringify(hour, null, 2));
  return hour;
}

/** A decimal from integer units: exact (a Float64 cast would turn 0.57 into 0.5699). */
const decimal = (units: string, scale: number, precision: number) => `(CAST(${units} AS Decimal(${precision}, ${scale})) / ${10 ** (scale === 4 ? 2 : 6)})`;
/** Cents (integer) as pmxt's Decimal(9,4) price. */
const cents = (x: string) => decimal(x, 4, 9);
/** Micro-shares (integer) as pmxt's Decimal(18,6) size. */
const micros = (x: string) => decimal(x, 6, 18);
/** A size in micro-shares from a hash: 1 in 8 is 0 (the level goes), 1 in 10 has six decimals. */
const sizeOf = (h: string) => `multiIf(${h} % 8 = 0, 0, ${h} % 10 = 1, ${h} % 50000000 + 1, (${h} % 100000 + 100) * 10000)`;
/** Slots (event indexes of a token) that are not price changes: books, trades, the tick size change. */
const notAChange = (j: string) => `(${j} % 1000 = 0 OR ${j} % 1500 = 1 OR (${j} = 3 AND ${TICK_SIZE_TOKEN}))`;
/** The tokens whose event 3 is a tick size change: one in a thousand, and the busy one. */
const TICK_SIZE_TOKEN = '(k % 1000 = 7 OR busy)';

/** Token k: its count c, its extra (appended) count e, its mid price in cents, its market and id (SQL). */
function tokensSql(o: ArchiveOptions): string {
  const { rows: R, tokens: K } = o;
  const busy = 2 * Math.floor(K / 3);
  // The other tokens' counts: 1 + B·u³ for u uniform in (0, 1), B so that they hold about 95 % of the rows.
  const count = (k: string) => `1 + toUInt64(floor(4 * (${R} * 0.95 - ${K}) / ${K} * pow((cityHash64(${k}, 1) % 1000000 + 0.5) / 1000000, 3)))`;
  const append = o.append ?? 0;
  const appendable = Math.ceil(K / 7);
  const perToken = Math.max(1, Math.floor(append / appendable));
  return `
    SELECT k, k = ${busy} AS busy, c, if(k % 7 = 0 AND ${append} > 0, ${perToken}, 0) AS e, 12 + cityHash64(k, 3) % 77 AS mid,
      toFixedString(concat('0x', leftPad(lower(hex(intDiv(k, 2))), 8, '0'),
        substring(lower(concat(hex(cityHash64(intDiv(k, 2), 7)), hex(cityHash64(intDiv(k, 2), 8)), hex(cityHash64(intDiv(k, 2), 9)),
          hex(cityHash64(intDiv(k, 2), 10)))), 1, 56)), 66) AS market,
      concat(toString(10 + (k % 2) * 50 + cityHash64(k, 1) % 40),
        ${[2, 3, 4, 5].map((i) => `leftPad(toString(cityHash64(k, ${i}) % 1000000000000000000), 18, '0')`).join(', ')},
        leftPad(toString(cityHash64(k, 6) % 1000), 3, '0')) AS asset_id
    FROM (SELECT number AS k, ${count('number')} AS other FROM numbers(${K}))
    -- The busy token takes what the others leave of the rows asked for (at least 5 % of them).
    ARRAY JOIN [if(k = ${busy},
      toUInt64(greatest(toInt64(${R} * 0.05), toInt64(${R}) - (SELECT toInt64(sum(${count('number')})) FROM numbers(${K}) WHERE number != ${busy}))),
      other)] AS c`;
}

/** The rows of the pmxt hour, in file order, as pmxt v2's columns (SQL; `o` orders them). */
function pmxtRowsSql(o: ArchiveOptions): string {
  // Event j of token k (j ≥ c: appended), with the 20 levels' sizes after it (before it, for a book).
  const events = `
    SELECT k, busy, c, e, mid, market, asset_id, j, j >= c AS appended, j % 20 AS lvl,
      multiIf(j % 1000 = 0, 'book', j % 1500 = 1, 'last_trade_price', j = 3 AND ${TICK_SIZE_TOKEN}, 'tick_size_change', 'price_change') AS kind,
      toInt64(j) - toInt64(kind = 'book') AS p,
      arrayMap(l -> if(p >= l, p - ((p - l) % 20), -1), range(20)) AS s0,
      arrayMap(x -> if(x >= 1 AND ${notAChange('x')}, x - 20, x), s0) AS s1,
      arrayMap((x, l) -> if(x < 1, cityHash64(k, l, 6), cityHash64(k, x, 5)), s1, range(20)) AS hs,
      arrayMap(h -> ${sizeOf('h')}, hs) AS sizes,
      if(kind = 'book' AND j > 0 AND cityHash64(k, j, 9) % 25 = 0, arrayMap((s, l) -> if(l = 5, 1234500000, s), sizes, range(20)), sizes) AS stated,
      if(arrayExists(x -> x > 0, arraySlice(sizes, 1, 10)), mid - arrayFirstIndex(x -> x > 0, arraySlice(sizes, 1, 10)), 0) AS bestBid,
      if(arrayExists(x -> x > 0, arraySlice(sizes, 11, 10)), mid + arrayFirstIndex(x -> x > 0, arraySlice(sizes, 11, 10)) - 1, 100) AS bestAsk,
      if(appended, ${ARCHIVE_HOUR} + 3000000 + intDiv((j - c) * 500000, greatest(e, 1)), ${ARCHIVE_HOUR} + intDiv(j * 3000000, c)) + k % 997 AS received
    FROM (${tokensSql(o)}) ARRAY JOIN range(c + e) AS j`;
  // pmxt lists levels worst first: bids ascending, asks descending.
  const levels = (first: number, price: (i: string) => string) =>
    `toJSONString(arrayMap(i -> (toString(${cents(price('i'))}), toString(${micros(`stated[i + ${first}]`)})),
      arrayFilter(i -> stated[i + ${first}] > 0, range(9, -1, -1))))`;
  const hashHex = (n: number) => `lower(hex(cityHash64(k, j, ${n})))`;
  return `
  SELECT
    fromUnixTimestamp64Milli(toInt64(assumeNotNull(received)), 'UTC') AS timestamp_received,
    fromUnixTimestamp64Milli(toInt64(assumeNotNull(received) - 1 - cityHash64(k, j, 12) % 30), 'UTC') AS timestamp,
    market,
    kind AS event_type,
    asset_id,
    if(kind = 'book', ${levels(1, (i) => `mid - 1 - ${i}`)}, NULL) AS bids,
    if(kind = 'book', ${levels(11, (i) => `mid + ${i}`)}, NULL) AS asks,
    multiIf(kind = 'price_change', ${cents('if(lvl < 10, mid - 1 - lvl, mid + lvl - 10)')}, kind = 'last_trade_price', ${cents('bestAsk')}, NULL) AS price,
    multiIf(kind = 'price_change', ${micros('sizes[lvl + 1]')},
      kind = 'last_trade_price', ${micros('(cityHash64(k, j, 13) % 5000000 + 1) * 100')}, NULL) AS size,
    multiIf(kind = 'price_change', if(lvl < 10, 'BUY', 'SELL'), kind = 'last_trade_price', if(cityHash64(k, j, 14) % 2 = 0, 'BUY', 'SELL'), NULL) AS side,
    if(kind = 'price_change' AND cityHash64(k, j, 11) % 2000 != 0, ${cents('bestBid')}, NULL) AS best_bid,
    if(kind = 'price_change' AND cityHash64(k, j, 11) % 2000 != 0, ${cents('bestAsk')}, NULL) AS best_ask,
    CAST(if(kind = 'last_trade_price' AND cityHash64(k, j, 15) % 3 != 0, (cityHash64(k, j, 15) % 2) * 1000, NULL) AS Nullable(UInt16)) AS fee_rate_bps,
    if(kind = 'last_trade_price', concat('0x', ${[16, 17, 18, 19].map(hashHex).join(', ')}), NULL) AS transaction_hash,
    if(kind = 'tick_size_change', ${cents('1')}, NULL) AS old_tick_size,
    if(kind = 'tick_size_change', CAST(0.001 AS Decimal(9, 4)), NULL) AS new_tick_size,
    (appended, k, j) AS o
  FROM (${events})`;
}

/**
 * Frame lines of pmxt v2 rows, exactly as docs/INGEST.md §6.2 says a row records its WebSocket event,
 * each after its receive time (§3): the reference encoding the normalizer's path is compared with.
 */
export function pmxtFramesSql(parquet: string, where = '1'): string {
  const s = (c: string) => `'"', ${c}, '"'`;
  const num = (c: string) => `'"', toString(${c}), '"'`;
  // [["p","s"],…] → [{"price":"p","size":"s"},…]
  const levels = (c: string) =>
    `concat('[', arrayStringConcat(arrayMap(l -> concat('{"price":"', l[1], '","size":"', l[2], '"}'),
      JSONExtract(ifNull(${c}, '[]'), 'Array(Array(String))')), ','), ']')`;
  const head = `'{"market":', ${s('toString(market)')}, ',"timestamp":"', toString(toUnixTimestamp64Milli(timestamp)), '"'`;
  return `
  SELECT concat(formatDateTime(timestamp_received, '%Y-%m-%dT%H:%i:%S', 'UTC'), '.',
    leftPad(toString(toUnixTimestamp64Milli(timestamp_received) % 1000), 3, '0'), '0000Z ',
    multiIf(
      event_type = 'book',
        concat(${head}, ',"event_type":"book","asset_id":', ${s('asset_id')}, ',"bids":', ${levels('bids')}, ',"asks":', ${levels('asks')}, '}'),
      event_type = 'price_change', concat(${head}, ',"event_type":"price_change","price_changes":[{"asset_id":', ${s('asset_id')},
        ',"price":', ${num('price')}, ',"size":', ${num('size')}, ',"side":', ${s('side')},
        if(best_bid IS NULL, '', concat(',"best_bid":', ${num('best_bid')})), if(best_ask IS NULL, '', concat(',"best_ask":', ${num('best_ask')})), '}]}'),
      event_type = 'last_trade_price', concat(${head}, ',"event_type":"last_trade_price","asset_id":', ${s('asset_id')},
        ',"price":', ${num('price')}, ',"size":', ${num('size')}, ',"side":', ${s('side')},
        if(fee_rate_bps IS NULL, '', concat(',"fee_rate_bps":', ${num('fee_rate_bps')})),
        if(ifNull(transaction_hash, '') = '', '', concat(',"transaction_hash":', ${s('transaction_hash')})), '}'),
      concat(${head}, ',"event_type":"tick_size_change","asset_id":', ${s('asset_id')}, ',"old_tick_size":', ${num('old_tick_size')},
        ',"new_tick_size":', ${num('new_tick_size')}, '}'))) AS line
  FROM file('${parquet}', Parquet)
  WHERE ${where}
  ORDER BY _row_number`;
}

/** The busy token's rows as Tardis's incremental_book_L2 CSV (books: snapshot rows, asks then bids). */
function tardisBookSql(parquet: string, asset: string): string {
  const row = (snapshot: string, side: string, price: string, size: string) =>
    `concat('polymarket,', asset_id, ',', toString(toUnixTimestamp64Milli(timestamp) * 1000), ',', toString(toUnixTimestamp64Milli(timestamp_received) * 1000),
      ',${snapshot},', ${side}, ',', ${price}, ',', ${size})`;
  return `
  SELECT line FROM (
    SELECT 'exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount' AS line, 0 AS n, 0 AS i
    UNION ALL
    SELECT ${row('true', 'l.1', 'l.2', 'l.3')}, _row_number + 1, i
    FROM file('${parquet}', Parquet)
    ARRAY JOIN arrayConcat(arrayMap(x -> ('ask', x[1], x[2]), arrayReverse(JSONExtract(ifNull(asks, '[]'), 'Array(Array(String))'))),
                           arrayMap(x -> ('bid', x[1], x[2]), arrayReverse(JSONExtract(ifNull(bids, '[]'), 'Array(Array(String))')))) AS l,
               arrayEnumerate(arrayConcat(JSONExtract(ifNull(asks, '[]'), 'Array(Array(String))'),
                 JSONExtract(ifNull(bids, '[]'), 'Array(Array(String))'))) AS i
    WHERE asset_id = '${asset}' AND event_type = 'book'
    UNION ALL
    SELECT ${row('false', "if(side = 'BUY', 'bid', 'ask')", 'toString(price)', 'toString(size)')}, _row_number + 1, 0
    FROM file('${parquet}', Parquet)
    WHERE asset_id = '${asset}' AND event_type = 'price_change')
  ORDER BY n, i`;
}

/** The busy token's trades as Tardis's trades CSV (the transaction hash as the trade id). */
function tardisTradesSql(parquet: string, asset: string): string {
  return `
  SELECT line FROM (
    SELECT 'exchange,symbol,timestamp,local_timestamp,id,side,price,amount' AS line, 0 AS n
    UNION ALL
    SELECT concat('polymarket,', asset_id, ',', toString(toUnixTimestamp64Milli(timestamp) * 1000), ',',
      toString(toUnixTimestamp64Milli(timestamp_received) * 1000),
      ',', ifNull(transaction_hash, ''), ',', lower(side), ',', toString(price), ',', toString(size)), _row_number + 1
    FROM file('${parquet}', Parquet)
    WHERE asset_id = '${asset}' AND event_type = 'last_trade_price')
  ORDER BY n`;
}

/** Builds the files into `dir` with a temporary chDB session (the child side of ensureArchiveHour). */
async function build(dir: string, o: ArchiveOptions): Promise<ArchiveHour> {
  const { Session } = await import('chdb');
  const session = new Session();
  const started = performance.now();
  const run = (sql: string) => session.queryAsync(sql, { format: 'TSV' });
  try {
    mkdirSync(join(dir, 'pmxt'));
    mkdirSync(join(dir, 'tardis'));
    mkdirSync(join(dir, 'frames'));
    const pmxt = join(dir, 'pmxt', `polymarket_orderbook_${HOUR_NAME}.parquet`);
    // One thread keeps the generated order (sorted by market, asset, receive time, then the appended rows).
    // Appended rows go last (a sort, for the small files that have them).
    const order = o.append ? 'ORDER BY o' : '';
    await run(`SELECT * EXCEPT o FROM (${pmxtRowsSql(o)}) ${order} INTO OUTFILE '${pmxt}' TRUNCATE FORMAT Parquet
      SETTINGS max_threads = 1, output_format_parquet_row_group_size = 1048576, output_format_parquet_compression_method = 'zstd',
               output_format_compression_level = 9, output_format_parquet_write_bloom_filter = 0`);
    const file = `file('${pmxt}', Parquet)`;
    const [stats] = (
      await run(
        `SELECT count(), uniqExact(asset_id), countIf(event_type = 'book'), countIf(event_type = 'price_change'), countIf(event_type = 'last_trade_price'),
         countIf(event_type = 'tick_size_change'), (SELECT asset_id FROM (${tokensSql(o)}) WHERE busy), (SELECT sum(e) FROM (${tokensSql(o)})) FROM ${file}`,
      )
    )
      .text()
      .trim()
      .split('\n')
      .map((l) => l.split('\t'));
    const [rows, tokens, books, changes, trades, ticks, busyAsset, appended] = stats;
    // The generator's promise: sorted as pmxt sorts (the appended rows after).
    const [unsorted] = (
      await run(`SELECT countIf(key < prev) FROM (SELECT (market, asset_id, timestamp_received) AS key,
        lagInFrame(key) OVER (ORDER BY _row_number ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS prev, _row_number AS n FROM ${file})
        WHERE n > 0 AND n < ${Number(rows) - Number(appended)}`)
    )
      .text()
      .trim()
      .split('\n');
    if (unsorted !== '0') throw new Error(`generated rows are not in pmxt's order (${unsorted} out of place)`);
    const frames = join(dir, 'frames', 'busy-token.jsonl');
    await run(`${pmxtFramesSql(pmxt, `asset_id = '${busyAsset}'`)} INTO OUTFILE '${frames}' TRUNCATE FORMAT TSVRaw`);
    let allFrames: string | null = null;
    if (o.allFrames) {
      allFrames = join(dir, 'frames', 'all-tokens.jsonl');
      await run(`${pmxtFramesSql(pmxt)} INTO OUTFILE '${allFrames}' TRUNCATE FORMAT TSVRaw`);
    }
    const tardis = [
      join(dir, 'tardis', `polymarket_incremental_book_L2_${DAY_NAME}_${busyAsset}.csv.gz`),
      join(dir, 'tardis', `polymarket_trades_${DAY_NAME}_${busyAsset}.csv.gz`),
    ];
    await run(`${tardisBookSql(pmxt, busyAsset)} INTO OUTFILE '${tardis[0]}' TRUNCATE COMPRESSION 'gzip' FORMAT TSVRaw`);
    await run(`${tardisTradesSql(pmxt, busyAsset)} INTO OUTFILE '${tardis[1]}' TRUNCATE COMPRESSION 'gzip' FORMAT TSVRaw`);
    const { statSync } = await import('node:fs');
    return {
      version: ARCHIVE_VERSION,
      dir,
      pmxt,
      tardis,
      frames,
      allFrames,
      busyAsset,
      rows: Number(rows),
      tokens: Number(tokens),
      busyRows: Number((await run(`SELECT count() FROM ${file} WHERE asset_id = '${busyAsset}'`)).text().trim()),
      events: { book: Number(books), price_change: Number(changes), last_trade_price: Number(trades), tick_size_change: Number(ticks) },
      bytes: statSync(pmxt).size,
      buildSeconds: Math.round((performance.now() - started) / 100) / 10,
    };
  } finally {
    session.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const hour = await build(process.argv[2], JSON.parse(process.argv[3]) as ArchiveOptions);
  process.stdout.write(`${JSON.stringify(hour)}\n`);
  process.exit(0);
}
