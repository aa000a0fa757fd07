import { parseArgs } from 'node:util';
import { ConfigError, parseEnvironment } from '../../config.js';

/**
 * The recorder's settings: the environment variables of config.ts (for `RECORDER=1` inside the API
 * process and for the compose service) overridden by `npm run record` flags.
 */
export interface RecorderOptions {
  wsUrl: string;
  gammaUrl: string;
  /** Explicit tokens, or null for `--all` (every live token Gamma lists). */
  assets: string[] | null;
  maxAssets: number;
  archiveDir: string | null;
  assetsPerSocket: number;
  pingIntervalMs: number;
  staleAfterMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  batchRows: number;
  batchAgeMs: number;
  maxBufferedRows: number;
  retryMinMs: number;
  retryMaxMs: number;
  discoveryIntervalMs: number;
  statusIntervalMs: number;
  metricsPort: number;
}

/** `npm run record` flags → the environment variable each overrides. */
const FLAGS = {
  assets: 'RECORDER_ASSETS',
  'max-assets': 'RECORDER_MAX_ASSETS',
  archive: 'RECORDER_ARCHIVE_DIR',
  'ws-url': 'POLYMARKET_WS_URL',
  'gamma-url': 'GAMMA_URL',
  'assets-per-socket': 'RECORDER_ASSETS_PER_SOCKET',
  'ping-interval-ms': 'RECORDER_PING_INTERVAL_MS',
  'stale-after-ms': 'RECORDER_STALE_AFTER_MS',
  'batch-rows': 'RECORDER_BATCH_ROWS',
  'batch-age-ms': 'RECORDER_BATCH_AGE_MS',
  'max-buffered-rows': 'RECORDER_MAX_BUFFERED_ROWS',
  'discovery-interval': 'RECORDER_DISCOVERY_INTERVAL_S',
  'status-interval': 'RECORDER_STATUS_INTERVAL_S',
  'metrics-port': 'RECORDER_METRICS_PORT',
} as const;

export const RECORDER_USAGE = `usage: npm run record -- (--all [--max-assets N] | --assets <id,...>) [--archive <dir>]
  [--ws-url URL] [--gamma-url URL] [--assets-per-socket N] [--ping-interval-ms N] [--stale-after-ms N]
  [--batch-rows N] [--batch-age-ms N] [--max-buffered-rows N] [--discovery-interval S] [--status-interval S]
  [--metrics-port P]`;

/** Parses the environment and `argv` (flags win); a bad or missing value throws a one-line ConfigError. */
export function loadRecorderOptions(env: NodeJS.ProcessEnv = process.env, argv: string[] = []): RecorderOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      all: { type: 'boolean' },
      active: { type: 'boolean' },
      ...Object.fromEntries(Object.keys(FLAGS).map((name) => [name, { type: 'string' as const }])),
    },
    allowPositionals: true,
    strict: false,
  });
  const unknown = Object.keys(values).find((k) => k !== 'all' && k !== 'active' && !(k in FLAGS));
  if (unknown || positionals.length) throw new ConfigError(`unknown argument ${unknown ? `--${unknown}` : positionals[0]}\n${RECORDER_USAGE}`);
  const merged: NodeJS.ProcessEnv = { ...env };
  for (const [name, variable] of Object.entries(FLAGS)) {
    const v = values[name];
    if (typeof v === 'string') merged[variable] = v;
    else if (v === true) throw new ConfigError(`--${name} needs a value\n${RECORDER_USAGE}`);
  }
  // `--active`: the flag's name before the recorder followed the whole venue; the same as `--all`.
  if (values.all === true || values.active === true) merged.RECORDER_ACTIVE = '1';

  const c = parseEnvironment(merged, 'recorder configuration');
  if (c.RECORDER_ACTIVE === (c.RECORDER_ASSETS !== undefined)) {
    throw new ConfigError(`the recorder needs exactly one of --all (RECORDER_ACTIVE=1) or --assets <id,...> (RECORDER_ASSETS)\n${RECORDER_USAGE}`);
  }
  if (c.RECORDER_RECONNECT_MAX_MS < c.RECORDER_RECONNECT_MIN_MS || c.RECORDER_RETRY_MAX_MS < c.RECORDER_RETRY_MIN_MS) {
    throw new ConfigError('Invalid recorder configuration: a *_MAX_MS backoff bound is below its *_MIN_MS');
  }
  // Only the server's PONG proves a quiet socket alive: declaring it dead before the next PING would churn healthy sockets.
  if (c.RECORDER_STALE_AFTER_MS <= c.RECORDER_PING_INTERVAL_MS) {
    throw new ConfigError('Invalid recorder configuration: RECORDER_STALE_AFTER_MS must be longer than RECORDER_PING_INTERVAL_MS');
  }
  return {
    wsUrl: c.POLYMARKET_WS_URL,
    gammaUrl: c.GAMMA_URL.replace(/\/+$/, ''),
    assets: c.RECORDER_ASSETS ?? null,
    maxAssets: c.RECORDER_MAX_ASSETS,
    archiveDir: c.RECORDER_ARCHIVE_DIR ?? null,
    assetsPerSocket: c.RECORDER_ASSETS_PER_SOCKET,
    pingIntervalMs: c.RECORDER_PING_INTERVAL_MS,
    staleAfterMs: c.RECORDER_STALE_AFTER_MS,
    reconnectMinMs: c.RECORDER_RECONNECT_MIN_MS,
    reconnectMaxMs: c.RECORDER_RECONNECT_MAX_MS,
    batchRows: c.RECORDER_BATCH_ROWS,
    batchAgeMs: c.RECORDER_BATCH_AGE_MS,
    maxBufferedRows: c.RECORDER_MAX_BUFFERED_ROWS,
    retryMinMs: c.RECORDER_RETRY_MIN_MS,
    retryMaxMs: c.RECORDER_RETRY_MAX_MS,
    discoveryIntervalMs: c.RECORDER_DISCOVERY_INTERVAL_S * 1000,
    statusIntervalMs: c.RECORDER_STATUS_INTERVAL_S * 1000,
    metricsPort: c.RECORDER_METRICS_PORT,
  };
}
