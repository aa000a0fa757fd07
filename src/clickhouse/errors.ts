/** The engine cannot be reached (server down, network): callers answer 503, never 500. */
export class EngineUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EngineUnavailableError';
  }
}

/**
 * The engine could not write an export's file (a full disk, a write the kernel refused): nothing of
 * it was sent, so callers answer 503 before the first byte (docs/API.md §6), never a short file.
 */
export class ExportWriteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExportWriteError';
  }
}

/** Another process holds the embedded engine's data directory (chDB allows one process per dir). */
export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly holderPid: number | null,
  ) {
    super(
      `DATA_DIR ${dataDir} is locked by another tickhouse process${holderPid ? ` (pid ${holderPid})` : ''}: ` +
        'the embedded engine allows one process per directory. Stop that process, or run this with a different ' +
        'DATA_DIR, or point CLICKHOUSE_URL at a ClickHouse server so several processes can share the data.',
    );
    this.name = 'DataDirLockedError';
  }
}

const UNREACHABLE = /ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENOTFOUND|ETIMEDOUT|EPIPE|socket hang up|Timeout error|timed out|other side closed/i;

/** True for errors that mean "the server could not be reached", as opposed to a failed query. */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && UNREACHABLE.test(code)) return true;
  return UNREACHABLE.test(err.message) || (err.cause !== undefined && isConnectionError(err.cause));
}
