import type { Engine } from '../../src/clickhouse/engine.js';
import { loadRecorderOptions, type RecorderOptions } from '../../src/ingest/recorder/options.js';
import { setLogLevel } from '../../src/log.js';

/** Recorder options for tests: fast pings, backoffs and batches, no status line, no Gamma refresh. */
export function recorderOptions(overrides: Partial<RecorderOptions> & Pick<RecorderOptions, 'wsUrl' | 'gammaUrl'>): RecorderOptions {
  return {
    ...loadRecorderOptions({ RECORDER_ACTIVE: '1' }),
    pingIntervalMs: 50,
    staleAfterMs: 2000,
    reconnectMinMs: 20,
    reconnectMaxMs: 200,
    batchAgeMs: 50,
    retryMinMs: 20,
    retryMaxMs: 200,
    discoveryIntervalMs: 0,
    statusIntervalMs: 0,
    ...overrides,
  };
}

export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The service's JSON log lines from now on (they still reach stdout), at level info: what an
 * operator sees, and the moments the recorder noticed something. `stop()` ends the capture.
 */
export function captureLog(): { lines: Record<string, unknown>[]; stop(): void } {
  const lines: Record<string, unknown>[] = [];
  const write = process.stdout.write;
  setLogLevel('info');
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    const text = String(chunk);
    if (text.startsWith('{"time"')) lines.push(JSON.parse(text));
    return write.call(process.stdout, chunk, ...rest);
  }) as typeof process.stdout.write;
  return {
    lines,
    stop() {
      process.stdout.write = write;
    },
  };
}

/**
 * Every stored row without `seq` (whose values depend on the writer), in (asset, t, seq) order, so
 * two runs over the same frames compare equal exactly when they stored the same rows in the same
 * arrival order. `local_t` in Unix µs (= t × 1000 where no receive time was known).
 */
export async function storedRows(engine: Engine) {
  const [ticks, snapshots, markets, marketEvents] = await Promise.all([
    engine.rows(
      `SELECT asset_id, toUnixTimestamp64Milli(t) AS t, toUnixTimestamp64Micro(local_t) AS local_t, event, side, best_bid, best_ask, price, size, market,
         fee_rate_bps, tx_hash FROM ticks ORDER BY asset_id, t, seq SETTINGS output_format_json_quote_64bit_integers = 0`,
    ),
    engine.rows(
      `SELECT asset_id, toUnixTimestamp64Milli(t) AS t, toUnixTimestamp64Micro(local_t) AS local_t, is_checkpoint, market, bids, asks, tick_size,
         last_trade_price FROM book_snapshots ORDER BY asset_id, t, seq SETTINGS output_format_json_quote_64bit_integers = 0`,
    ),
    engine.rows(`SELECT asset_id, market, outcome, question, slug, toUnixTimestamp64Milli(updated_at) AS updated_at FROM markets FINAL ORDER BY asset_id`),
    engine.rows(
      `SELECT * EXCEPT (t, seq, local_t), toUnixTimestamp64Milli(t) AS t, toUnixTimestamp64Micro(local_t) AS local_t FROM market_events
       ORDER BY asset_id, market_events.t, market_events.seq SETTINGS output_format_json_quote_64bit_integers = 0`,
    ),
  ]);
  return { ticks, snapshots, markets, marketEvents };
}

/** The rows of storedRows without their receive times: what a replay of the same frames without receive times stores. */
export function withoutReceiveTimes(rows: Awaited<ReturnType<typeof storedRows>>) {
  const strip = (list: Record<string, unknown>[]) => list.map(({ local_t: _l, ...row }) => row);
  return { ticks: strip(rows.ticks), snapshots: strip(rows.snapshots), markets: rows.markets, marketEvents: strip(rows.marketEvents) };
}

/**
 * A digest of every row of the ingest tables (seq left out, see storedRows): two stores with the same
 * digest hold the same rows, receive times included.
 */
export async function tablesDigest(engine: Engine): Promise<string> {
  const tables: Record<string, string> = {
    ticks: 'asset_id, t, local_t, event, side, best_bid, best_ask, price, size, book_side, market, fee_rate_bps, tx_hash',
    book_snapshots: 'asset_id, t, local_t, is_checkpoint, market, bids, asks, tick_size, last_trade_price',
    market_events:
      'asset_id, t, local_t, event, market, old_tick_size, new_tick_size, best_bid, best_ask, spread, winning_asset_id, winning_outcome, outcome, ' +
      'neg_risk, fees_enabled, taker_base_fee, maker_base_fee, fee_rate, fee_exponent, fee_taker_only, fee_rebate_rate, raw',
    book_events: 'asset_id, t, local_t, kind, market, price, size, book_side, bids, asks',
  };
  const digests: string[] = [];
  for (const [table, columns] of Object.entries(tables)) {
    const [row] = await engine.rows<{ d: string }>(
      `SELECT hex(SHA256(toString(groupArray(r)))) AS d FROM (SELECT tuple(${columns}) AS r FROM ${table} ORDER BY asset_id, t, seq)`,
    );
    digests.push(`${table}:${row.d}`);
  }
  return digests.join(' ');
}

const INGEST_TABLES = [
  'ticks',
  'book_snapshots',
  'markets',
  'ohlcv_1m',
  'ohlcv_1h',
  'ohlcv_1d',
  'asset_stats',
  'activity_1m',
  'book_events',
  'book_checks',
  'capture_events',
  'ticks_1d',
  'market_events',
  'book_tick_sizes',
  'market_protocols',
] as const;

/** Empties the ingest tables and their rollups, so the same engine can take a second run to compare. */
export async function truncateIngestTables(engine: Engine): Promise<void> {
  for (const name of INGEST_TABLES) await engine.command(`TRUNCATE TABLE IF EXISTS ${name}`);
}
