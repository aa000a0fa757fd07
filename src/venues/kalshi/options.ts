import { parseArgs } from 'node:util';
import { ConfigError, parseEnvironment } from '../../config.js';
import { type KalshiCredentials, loadCredentials } from './auth.js';
import { isKalshiAssetId, tickerOf } from './ids.js';

/** `npm run record -- --venue kalshi …`: the Kalshi recorder's settings (docs/KALSHI.md §3). */
export interface KalshiRecorderOptions {
  credentials: KalshiCredentials;
  wsUrl: string;
  restUrl: string;
  /** Given market tickers, or null for `--all` (every open market). */
  tickers: string[] | null;
  maxAssets: number;
  archiveDir: string | null;
  /** Tickers per subscribe command (one orderbook_delta subscription, one seq, each). */
  tickersPerCommand: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  batchRows: number;
  batchAgeMs: number;
  maxBufferedRows: number;
  retryMinMs: number;
  retryMaxMs: number;
  discoveryIntervalMs: number;
  statusIntervalMs: number;
}

export const KALSHI_WS_URL = 'wss://api.elections.kalshi.com/trade-api/ws/v2';
export const KALSHI_REST_URL = 'https://api.elections.kalshi.com/trade-api/v2';

export const KALSHI_RECORDER_USAGE = `usage: npm run record -- --venue kalshi (--all [--max-assets N] | --assets <ticker,...>) [--archive <dir>]
  [--ws-url URL] [--rest-url URL] [--batch-rows N] [--batch-age-ms N] [--discovery-interval S] [--status-interval S]
  with KALSHI_API_KEY_ID and KALSHI_PRIVATE_KEY_PATH set (KALSHI_WS_URL, KALSHI_REST_URL optional)`;

const FLAGS = {
  assets: 'RECORDER_ASSETS',
  'max-assets': 'RECORDER_MAX_ASSETS',
  archive: 'RECORDER_ARCHIVE_DIR',
  'ws-url': 'KALSHI_WS_URL',
  'rest-url': 'KALSHI_REST_URL',
  'batch-rows': 'RECORDER_BATCH_ROWS',
  'batch-age-ms': 'RECORDER_BATCH_AGE_MS',
  'discovery-interval': 'RECORDER_DISCOVERY_INTERVAL_S',
  'status-interval': 'RECORDER_STATUS_INTERVAL_S',
} as const;

/** Parses the environment and `argv` (without `--venue kalshi`; flags win); a bad or missing value throws a one-line ConfigError. */
export function loadKalshiRecorderOptions(env: NodeJS.ProcessEnv = process.env, argv: string[] = []): KalshiRecorderOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { all: { type: 'boolean' }, ...Object.fromEntries(Object.keys(FLAGS).map((name) => [name, { type: 'string' as const }])) },
    allowPositionals: true,
    strict: false,
  });
  const unknown = Object.keys(values).find((k) => k !== 'all' && !(k in FLAGS));
  if (unknown || positionals.length) throw new ConfigError(`unknown argument ${unknown ? `--${unknown}` : positionals[0]}\n${KALSHI_RECORDER_USAGE}`);
  const merged: NodeJS.ProcessEnv = { ...env };
  for (const [name, variable] of Object.entries(FLAGS)) {
    const v = values[name];
    if (typeof v === 'string') merged[variable] = v;
    else if (v === true) throw new ConfigError(`--${name} needs a value\n${KALSHI_RECORDER_USAGE}`);
  }
  // The shared recorder settings (batches, retries, intervals) are read by the one schema; the Kalshi ones here.
  const { RECORDER_ASSETS: _polymarketAssets, KALSHI_WS_URL: wsUrl, KALSHI_REST_URL: restUrl, ...shared } = merged;
  const c = parseEnvironment(shared, 'recorder configuration');
  const given = merged.RECORDER_ASSETS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if ((values.all === true) === (given !== undefined && given.length > 0)) {
    throw new ConfigError(`the recorder needs exactly one of --all or --assets <ticker,...>\n${KALSHI_RECORDER_USAGE}`);
  }
  const tickers = given?.map((a) => (isKalshiAssetId(a) ? tickerOf(a) : a)) ?? null;
  for (const t of tickers ?? []) if (!/^[A-Za-z0-9._-]{1,100}$/.test(t)) throw new ConfigError(`--assets: ${JSON.stringify(t)} is not a Kalshi market ticker`);
  for (const [name, url] of [
    ['KALSHI_WS_URL', wsUrl],
    ['KALSHI_REST_URL', restUrl],
  ] as const) {
    if (url !== undefined && url !== '' && !URL.canParse(url)) throw new ConfigError(`Invalid recorder configuration: ${name} must be a URL`);
  }
  const credentials = loadCredentials(env);
  return {
    credentials,
    wsUrl: wsUrl || KALSHI_WS_URL,
    restUrl: (restUrl || KALSHI_REST_URL).replace(/\/+$/, ''),
    tickers,
    maxAssets: c.RECORDER_MAX_ASSETS,
    archiveDir: c.RECORDER_ARCHIVE_DIR ?? null,
    tickersPerCommand: 100,
    reconnectMinMs: c.RECORDER_RECONNECT_MIN_MS,
    reconnectMaxMs: c.RECORDER_RECONNECT_MAX_MS,
    batchRows: c.RECORDER_BATCH_ROWS,
    batchAgeMs: c.RECORDER_BATCH_AGE_MS,
    maxBufferedRows: c.RECORDER_MAX_BUFFERED_ROWS,
    retryMinMs: c.RECORDER_RETRY_MIN_MS,
    retryMaxMs: c.RECORDER_RETRY_MAX_MS,
    discoveryIntervalMs: c.RECORDER_DISCOVERY_INTERVAL_S * 1000,
    statusIntervalMs: c.RECORDER_STATUS_INTERVAL_S * 1000,
  };
}
