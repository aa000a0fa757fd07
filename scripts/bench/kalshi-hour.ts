import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Engine } from '../../src/clickhouse/engine.js';

/**
 * A generated hour of pmxt's Kalshi archive for the import bench (issue 40; schema and its provenance:
 * test/fixtures/pmxt-kalshi/PROVENANCE.md): `kalshi_orderbook_2026-05-15T00.parquet` with the archive's
 * 10 columns and types — times ms and µs, ladders as lists of ("1" decimal(9,4), "2" decimal(18,6))
 * structs, snapshot rows without `timestamp` — ZSTD, row groups of 1,048,576 rows, rows in receive order.
 * Each ticker's first row is a snapshot (8 YES and 8 NO levels on a cent grid); after those, 2.5 % of rows
 * are snapshots (a real hour: 0.3–32 %) and the rest `orderbook_delta`s of ±0.01–20 contracts at one of the
 * ticker's 16 levels' prices, over `tickers` tickers chosen at random (a real hour: up to 640,000 tickers,
 * 12–21 M rows). Deterministic; built once per option set under `<root>/kalshi-v1-<rows>-<tickers>/`.
 */
export const KALSHI_HOUR = Date.UTC(2026, 4, 15, 0);

export interface KalshiOptions {
  rows: number;
  tickers: number;
}

export interface KalshiHour extends KalshiOptions {
  path: string;
}

/** BENCH_KALSHI_ROWS (default 10,000,000) and BENCH_KALSHI_TICKERS (default 200,000). */
export function kalshiOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): KalshiOptions {
  const rows = Number(env.BENCH_KALSHI_ROWS ?? 10_000_000);
  const tickers = Number(env.BENCH_KALSHI_TICKERS ?? 200_000);
  if (!(Number.isSafeInteger(rows) && Number.isSafeInteger(tickers) && tickers >= 1 && tickers * 2 <= rows)) {
    throw new Error('BENCH_KALSHI_ROWS and BENCH_KALSHI_TICKERS must be integers, the tickers at most half the rows');
  }
  return { rows, tickers };
}

export function kalshiHour(root: string, o: KalshiOptions): KalshiHour {
  return { ...o, path: join(root, `kalshi-v1-${o.rows}-${o.tickers}`, 'kalshi_orderbook_2026-05-15T00.parquet') };
}

const LADDER = 'Array(Tuple(`1` Decimal(9, 4), `2` Decimal(18, 6)))';

/** The hour's rows in file order (n = row number). */
function rowsSql(o: KalshiOptions): string {
  const levels = (offset: number) =>
    `arrayMap(i -> (toDecimal32((1 + (k * 7 + i * 3 + ${offset}) % 99) / 100, 4), toDecimal64((1 + (h + i) % 5000) / 100, 6)), range(8))`;
  return `
  SELECT
    fromUnixTimestamp64Milli(toInt64(${KALSHI_HOUR} + intDiv(n * 3600000, ${o.rows})), 'UTC') AS timestamp_received,
    if(snapshot, NULL, fromUnixTimestamp64Micro(toInt64(${KALSHI_HOUR} * 1000 + intDiv(n * 3600000000, ${o.rows}) - 400000 - h % 1000), 'UTC'))
      AS timestamp,
    concat('KXBENCH-26MAY15-T', toString(k)) AS market_ticker,
    concat('00000000-0000-4000-8000-', leftPad(toString(k), 12, '0')) AS market_id,
    if(snapshot, 'orderbook_snapshot', 'orderbook_delta') AS event_type,
    if(snapshot, NULL, if(h % 2 = 0, 'yes', 'no')) AS side,
    CAST(if(snapshot, ${levels(0)}, []) AS ${LADDER}) AS yes_bids,
    CAST(if(snapshot, ${levels(50)}, []) AS ${LADDER}) AS no_bids,
    if(snapshot, NULL, toDecimal32((1 + (k * 7 + (intDiv(h, 2) % 8) * 3 + if(h % 2 = 0, 0, 50)) % 99) / 100, 4)) AS price,
    if(snapshot, NULL, toDecimal64((toInt64(h % 4001) - 2000) / 100, 6)) AS delta
  FROM (
    SELECT number AS n, intHash64(number) AS h,
      if(n < ${o.tickers}, n, intHash64(n + 1) % ${o.tickers}) AS k,
      n < ${o.tickers} OR intHash64(n + 2) % 1000 < 25 AS snapshot
    FROM numbers(${o.rows}))`;
}

/** Builds the hour with `engine` unless it is there already; returns its path. */
export async function ensureKalshiHour(engine: Engine, hour: KalshiHour, log: (line: string) => void = () => {}): Promise<string> {
  if (existsSync(hour.path)) return hour.path;
  const dir = join(hour.path, '..');
  mkdirSync(dir, { recursive: true });
  const building = `${hour.path}.build`;
  rmSync(building, { force: true });
  log(`  building the pmxt-kalshi hour (${hour.rows} rows over ${hour.tickers} tickers)…`);
  await engine.command(
    `INSERT INTO FUNCTION file({p:String}, Parquet) ${rowsSql(hour)}
     SETTINGS max_threads = 1, engine_file_truncate_on_insert = 1, output_format_parquet_row_group_size = 1048576,
       output_format_parquet_compression_method = 'zstd', output_format_parquet_write_bloom_filter = 0`,
    { params: { p: building } },
  );
  renameSync(building, hour.path);
  return hour.path;
}
