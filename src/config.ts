import { resolve } from 'node:path';
import { z } from 'zod';

/**
 * Every setting the service and its recorder read, in one schema parsed from the environment (the
 * tables of docs/guides/operating.md and recorder.md list them). Durations are milliseconds unless the name says otherwise.
 */
const flag = (fallback: '0' | '1') =>
  z
    .enum(['0', '1', 'true', 'false'])
    .default(fallback)
    .transform((v) => v === '1' || v === 'true');
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
/** A flag whose default depends on other settings (unset = undefined, decided in loadConfig). */
const optionalFlag = z
  .enum(['0', '1', 'true', 'false'])
  .optional()
  .transform((v) => (v === undefined ? undefined : v === '1' || v === 'true'));
const optionalUrl = z.string().url().optional();
const assetList = z
  .string()
  .transform((s) => [
    ...new Set(
      s
        .split(',')
        .map((a) => a.trim())
        .filter(Boolean),
    ),
  ])
  .pipe(z.array(z.string().regex(/^\d+$/, 'asset ids are decimal token ids')).min(1, 'give at least one asset id'));

const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATA_DIR: z.string().min(1).default('./data'),
  CLICKHOUSE_URL: optionalUrl,
  CLICKHOUSE_USER: z.string().default('default'),
  CLICKHOUSE_PASSWORD: z.string().default(''),
  CLICKHOUSE_DATABASE: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain identifier')
    .default('default'),
  /** Embedded engine: parallel chDB sessions for queries (streams get their own). */
  ENGINE_SESSIONS: z.coerce.number().int().min(1).max(64).default(4),
  /** One Redis, or with REDIS_CLUSTER=1 seed nodes of a cluster: several, comma-separated, so the client (re)connects through any that answers. */
  REDIS_URL: z
    .string()
    .refine((v) => v.split(',').every((u) => /^rediss?:\/\//.test(u.trim())), 'must start with redis:// or rediss://')
    .optional(),
  /** Redis Cluster: an explicit switch, because the service must start (and answer 503) while no node can be asked what it is. */
  REDIS_CLUSTER: flag('0'),
  PUBLIC_URL: optionalUrl,
  API_KEY_PREFIX: z
    .string()
    .regex(/^[a-z0-9]{1,16}_$/, 'must be 1-16 lowercase letters or digits followed by _')
    .default('th_'),
  /** IP of a reverse proxy whose X-Forwarded-For is trusted for the client address. */
  TRUSTED_PROXY: z.string().optional(),
  /** Who takes payments; unset = nowpayments with an API key, else sandbox on the embedded quick start, else none. */
  PAYMENTS: z.enum(['nowpayments', 'sandbox', 'none']).optional(),
  NOWPAYMENTS_API_KEY: z.string().min(1).optional(),
  NOWPAYMENTS_IPN_SECRET: z.string().min(1).optional(),
  NOWPAYMENTS_BASE_URL: z.string().url().default('https://api.nowpayments.io/v1'),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  /** Unset = on for the embedded quick start, off with a server backend. */
  DEMO_DATA: optionalFlag,
  /** Ticks in the demo dataset loaded on first start. */
  DEMO_TICKS: z.coerce.number().int().min(1000).max(50_000_000).default(300_000),
  /** Run the live recorder inside the API process (its settings below; ingest/recorder/options.ts). */
  RECORDER: flag('0'),
  /** Memory for reconstructed book history (segments), least recently used out; 0 turns the cache off. */
  BOOK_CACHE_MB: z.coerce.number().int().min(0).max(1_048_576).default(256),
  /** Seconds in-flight requests get to finish on SIGTERM. */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().min(0).max(600).default(10),

  // The live recorder (RECORDER=1, or `npm run record`, whose flags override these).
  POLYMARKET_WS_URL: z
    .string()
    .regex(/^wss?:\/\//, 'must start with ws:// or wss://')
    .default('wss://ws-subscriptions-clob.polymarket.com/ws/market'),
  GAMMA_URL: z.string().url().default('https://gamma-api.polymarket.com'),
  RECORDER_ASSETS: assetList.optional(),
  /** `--all` (older name `--active`): record every live token Gamma lists. */
  RECORDER_ACTIVE: flag('0'),
  /** `--all`: subscribe at most this many assets (0 = every live one). */
  RECORDER_MAX_ASSETS: int(0, 1_000_000).default(0),
  RECORDER_ARCHIVE_DIR: z.string().min(1).optional(),
  /** Polymarket's market channel serves at most 500 assets per connection. */
  RECORDER_ASSETS_PER_SOCKET: int(1, 500).default(500),
  RECORDER_PING_INTERVAL_MS: int(10, 600_000).default(10_000),
  /** A socket that received nothing (not even `PONG`) for this long is presumed dead and replaced. */
  RECORDER_STALE_AFTER_MS: int(50, 3_600_000).default(35_000),
  RECORDER_RECONNECT_MIN_MS: int(1, 600_000).default(500),
  RECORDER_RECONNECT_MAX_MS: int(1, 3_600_000).default(30_000),
  RECORDER_BATCH_ROWS: int(1, 1_000_000).default(20_000),
  RECORDER_BATCH_AGE_MS: int(1, 600_000).default(1_000),
  /** Rows not yet stored at which reading pauses (resumes at half). */
  RECORDER_MAX_BUFFERED_ROWS: int(1, 50_000_000).default(500_000),
  RECORDER_RETRY_MIN_MS: int(1, 600_000).default(500),
  RECORDER_RETRY_MAX_MS: int(1, 3_600_000).default(30_000),
  /** Gamma refresh for `--all` (0 = only at start). */
  RECORDER_DISCOVERY_INTERVAL_S: int(0, 86_400).default(300),
  /** Status line period (0 = none). */
  RECORDER_STATUS_INTERVAL_S: int(0, 86_400).default(10),
  /** `npm run record` only: serve /metrics on this port (0 = no metrics server). */
  RECORDER_METRICS_PORT: int(0, 65_535).default(0),
});

export type Environment = z.infer<typeof schema>;

/** Every variable the schema reads (the configuration tables of docs/guides/operating.md and recorder.md list exactly these). */
export const ENVIRONMENT_VARIABLES = Object.keys(schema.shape) as (keyof Environment)[];

export type Config = Omit<Environment, 'PAYMENTS' | 'DEMO_DATA'> & {
  PAYMENTS: NonNullable<Environment['PAYMENTS']>;
  DEMO_DATA: boolean;
  dataDir: string;
  publicUrl: string;
};

export class ConfigError extends Error {}

/**
 * Parses `env` (empty values count as unset); a bad value throws a ConfigError whose message is one
 * line naming the variable, e.g. `Invalid configuration: PORT="x": …` (`what` replaces "configuration").
 */
export function parseEnvironment(env: NodeJS.ProcessEnv, what = 'configuration'): Environment {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue.path[0]);
    throw new ConfigError(`Invalid ${what}: ${name}=${JSON.stringify(env[name] ?? '')}: ${issue.message}`);
  }
  return parsed.data;
}

/** The service's settings: the environment parsed, with DATA_DIR resolved and the public URL settled. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const c = parseEnvironment(env);
  if (c.PAYMENTS === 'nowpayments' && !c.NOWPAYMENTS_API_KEY) {
    throw new ConfigError('Invalid configuration: NOWPAYMENTS_API_KEY is required when PAYMENTS=nowpayments');
  }
  if (c.REDIS_URL?.includes(',') && !c.REDIS_CLUSTER) {
    throw new ConfigError('Invalid configuration: REDIS_URL lists several URLs, which only a Redis Cluster takes (REDIS_CLUSTER=1)');
  }
  // A server backend means a real deployment: free sandbox upgrades and 300k synthetic ticks there
  // would be a gift and a pollution, so both must be asked for by name.
  const serverBackend = Boolean(c.CLICKHOUSE_URL || c.REDIS_URL);
  return {
    ...c,
    PAYMENTS: c.PAYMENTS ?? (c.NOWPAYMENTS_API_KEY ? 'nowpayments' : serverBackend ? 'none' : 'sandbox'),
    DEMO_DATA: c.DEMO_DATA ?? !serverBackend,
    dataDir: resolve(c.DATA_DIR),
    publicUrl: (c.PUBLIC_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, ''),
  };
}
