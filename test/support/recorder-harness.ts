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
 * arrival order.
 */
export async function storedRows(engine: Engine) {
  const [ticks, snapshots, markets] = await Promise.all([
    engine.rows(`SELECT asset_id, toUnixTimestamp64Milli(t) AS t, event, side, best_bid, best_ask, price, size, market FROM ticks ORDER BY asset_id, t, seq`),
    engine.rows(`SELECT asset_id, toUnixTimestamp64Milli(t) AS t, is_checkpoint, market, bids, asks FROM book_snapshots ORDER BY asset_id, t, seq`),
    engine.rows(`SELECT asset_id, market, outcome, question, slug, toUnixTimestamp64Milli(updated_at) AS updated_at FROM markets FINAL ORDER BY asset_id`),
  ]);
  return { ticks, snapshots, markets };
}

const INGEST_TABLES = [
  'ticks',
  'book_snapshots',
  'markets',
  'candles_1m',
  'candles_1h',
  'asset_stats',
  'activity_1m',
  'book_events',
  'book_checks',
  'capture_events',
  'ticks_1d',
] as const;

/** Empties the ingest tables and their rollups, so the same engine can take a second run to compare. */
export async function truncateIngestTables(engine: Engine): Promise<void> {
  for (const name of INGEST_TABLES) await engine.command(`TRUNCATE TABLE IF EXISTS ${name}`);
}
