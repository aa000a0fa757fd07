import { redactKeys } from './redact.js';

/**
 * One JSON object per line on stdout; the level threshold comes from LOG_LEVEL. Every line passes
 * through redactKeys: no field of any message can put an API key in the log.
 */
const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof LEVELS;

let threshold: number = LEVELS[(process.env.LOG_LEVEL as LogLevel) ?? 'info'] ?? LEVELS.info;

export function setLogLevel(level: LogLevel) {
  threshold = LEVELS[level];
}

function write(level: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>) {
  if (LEVELS[level] < threshold) return;
  process.stdout.write(`${redactKeys(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }))}\n`);
}

export const log = {
  debug: (msg: string, fields?: Record<string, unknown>) => write('debug', msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write('info', msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write('warn', msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write('error', msg, fields),
};

/**
 * A caught error as a log line or a CLI message prints it: its message, or with 'stack' its stack
 * (for errors that are bugs: where it came from). A thrown value that is not an Error prints as text.
 */
export function errorText(err: unknown, detail: 'message' | 'stack' = 'message'): string {
  if (!(err instanceof Error)) return String(err);
  return detail === 'stack' ? (err.stack ?? err.message) : err.message;
}
