import { resolve } from 'node:path';
import { z } from 'zod';

/** Every setting the service reads, parsed once from the environment (README lists them). */
const flag = (fallback: '0' | '1') => z.enum(['0', '1', 'true', 'false']).default(fallback).transform((v) => v === '1' || v === 'true');
const optionalUrl = z.string().url().optional();

const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATA_DIR: z.string().min(1).default('./data'),
  CLICKHOUSE_URL: optionalUrl,
  CLICKHOUSE_USER: z.string().default('default'),
  CLICKHOUSE_PASSWORD: z.string().default(''),
  CLICKHOUSE_DATABASE: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain identifier').default('default'),
  /** Embedded engine: parallel chDB sessions for queries (streams get their own). */
  ENGINE_SESSIONS: z.coerce.number().int().min(1).max(64).default(4),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must start with redis:// or rediss://').optional(),
  PUBLIC_URL: optionalUrl,
  API_KEY_PREFIX: z.string().regex(/^[a-z0-9]{1,16}_$/, 'must be 1-16 lowercase letters or digits followed by _').default('th_'),
  /** IP of a reverse proxy whose X-Forwarded-For is trusted for the client address. */
  TRUSTED_PROXY: z.string().optional(),
  NOWPAYMENTS_API_KEY: z.string().min(1).optional(),
  NOWPAYMENTS_IPN_SECRET: z.string().min(1).optional(),
  NOWPAYMENTS_BASE_URL: z.string().url().default('https://api.nowpayments.io/v1'),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  DEMO_DATA: flag('1'),
  /** Ticks in the demo dataset loaded on first start. */
  DEMO_TICKS: z.coerce.number().int().min(1000).max(50_000_000).default(300_000),
  /** Run the live recorder inside the API process (its settings: RECORDER_* in recorder-config.ts). */
  RECORDER: flag('0'),
  /** Memory for reconstructed book history (segments), least recently used out; 0 turns the cache off. */
  BOOK_CACHE_MB: z.coerce.number().int().min(0).max(1_048_576).default(256),
  /** Seconds in-flight requests get to finish on SIGTERM. */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().min(0).max(600).default(10),
});

export type Config = z.infer<typeof schema> & { dataDir: string; publicUrl: string };

export class ConfigError extends Error {}

/** Parses `env`; a bad value throws a ConfigError whose message is one line naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue.path[0]);
    throw new ConfigError(`Invalid configuration: ${name}=${JSON.stringify(env[name] ?? '')}: ${issue.message}`);
  }
  const c = parsed.data;
  return {
    ...c,
    dataDir: resolve(c.DATA_DIR),
    publicUrl: (c.PUBLIC_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, ''),
  };
}
