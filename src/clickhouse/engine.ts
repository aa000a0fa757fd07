import type { Readable } from 'node:stream';

/** Values bound server-side to `{name:Type}` placeholders; never spliced into SQL text. */
export type QueryParams = Record<string, unknown>;
/**
 * ClickHouse settings applied to one insert. SELECTs carry their own in a SETTINGS clause of the SQL;
 * what every statement needs is in SESSION_SETTINGS.
 */
export type Settings = Record<string, string | number | boolean>;

/**
 * Settings every statement of the service runs with, set once per session (embedded) or per client
 * (server) instead of in each query: JSON output as JavaScript reads it, 64-bit integers (ms, seq,
 * counts) as numbers rather than the quoted strings a server prints by default, and `/` in text (outcome
 * labels, questions) as is, as JSON.stringify writes it.
 */
export const SESSION_SETTINGS = {
  output_format_json_quote_64bit_integers: 0,
  output_format_json_escape_forward_slashes: 0,
} as const satisfies Settings;

export type LocalFileFormat = 'Parquet' | 'LineAsString';
export type LocalFileCompression = 'none' | 'gzip' | 'zstd';

export interface LocalFile {
  /** A table expression reading the file's rows in the structure asked for. */
  table: string;
  /** SQL of a row's 0-based position in the file. */
  rowNumber: string;
  /** Parameters `table` needs bound in every query that reads it. */
  params: QueryParams;
  /** SETTINGS (SQL, may be empty) for every query that reads `table`. */
  settings: string;
  /** Drops what the engine keeps of the file. */
  release(): Promise<void>;
}

export interface QueryOptions {
  params?: QueryParams;
  /** Aborting cancels the engine query (client disconnect, shutdown). */
  signal?: AbortSignal;
}

/**
 * The only door to ClickHouse. Two implementations (embedded chDB, HTTP server) run the same SQL;
 * nothing outside src/clickhouse/ may know which one is behind it.
 */
export interface Engine {
  readonly backend: 'embedded' | 'server';
  /** Human description of where the data lives, for the startup log. */
  readonly location: string;
  /** Runs a SELECT and returns its rows (JSONEachRow parsed): small results only. */
  rows<T = Record<string, unknown>>(sql: string, options?: QueryOptions): Promise<T[]>;
  /**
   * Runs a SELECT and returns each row as an array in column order (JSONCompactEachRow parsed): no
   * column names repeated per row, so less to format, send and parse on hot point reads.
   */
  compactRows<T extends unknown[] = unknown[]>(sql: string, options?: QueryOptions): Promise<T[]>;
  /**
   * Runs a SELECT and returns its whole result in output `format` (RowBinary, say) as bytes: for
   * bounded results (a LIMIT) read on hot paths, where opening a stream costs more than it saves
   * (embedded: a stream opens a chDB session of its own). Aborting `signal` rejects the call; the
   * server cancels the query at once, the embedded engine once it ends (it cannot interrupt one).
   */
  bytes(sql: string, format: string, options?: QueryOptions): Promise<Buffer>;
  /** Runs a statement that returns nothing useful (DDL, INSERT … SELECT, ALTER). */
  command(sql: string, options?: QueryOptions): Promise<void>;
  /** Inserts already-serialized JSONEachRow text (one object per line) into `table`. */
  insertJsonEachRow(table: string, body: string | Buffer, settings?: Settings): Promise<void>;
  /**
   * Inserts TabSeparated text (`columns` in that order, `\N` for NULL or a column's default) into
   * `table`: half the bytes of JSONEachRow for rows of numbers, and cheaper for the engine to parse.
   */
  insertTsv(table: string, columns: readonly string[], body: string | Buffer, settings?: Settings): Promise<void>;
  /**
   * A file on this machine as a table the engine reads itself (an import's source, docs/INGEST.md §6):
   * embedded, the `file` table function on it; on a server, which cannot see this machine's files, the
   * file is streamed (compressed as it is) into a table of its own through the `input` table function.
   * Use `table` in FROM with `params` bound; `rowNumber` is each row's 0-based position in the file.
   */
  localFile(path: string, format: LocalFileFormat, structure: string, compression: LocalFileCompression): Promise<LocalFile>;
  /**
   * Streams the result of `sql` in ClickHouse output `format` as raw bytes. The stream respects
   * back-pressure; destroying it or aborting `signal` cancels the engine query. An engine error
   * after the first byte surfaces as a stream error.
   */
  stream(sql: string, format: string, options?: QueryOptions): Readable;
  /**
   * A number that changes whenever stored data may have changed, when every writer is known to this
   * process (embedded: DATA_DIR is locked to one process, and all its writes go through
   * EmbeddedEngine); null when other processes may write (a server), so callers must ask the data.
   * Lets caches of stored data skip their validity query while nothing was written.
   */
  writeEpoch(): number | null;
  /** True when the engine answers a trivial query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
