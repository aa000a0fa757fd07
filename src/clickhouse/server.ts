import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { type ClickHouseClient, createClient, drainStream, extractErrorAtTheEndOfChunk } from '@clickhouse/client';
import { type Engine, type LocalFile, type LocalFileCompression, type LocalFileFormat, type QueryOptions, SESSION_SETTINGS, type Settings } from './engine.js';
import { EngineUnavailableError, isConnectionError } from './errors.js';
import { sqlString } from './literals.js';

export interface ServerOptions {
  url: string;
  username: string;
  password: string;
  database: string;
}

/**
 * Streams are SELECTs. Over HTTP a server runs on after its client went away, until writing a block fails,
 * unless the query is read-only and asks to be cancelled: then it checks the peer at every progress step.
 * POST requests (all of @clickhouse/client's) are not read-only by themselves; readonly = 2 still lets the
 * query's SETTINGS clause apply.
 */
const STREAM_SETTINGS = { readonly: '2', cancel_http_readonly_queries_on_client_close: 1 } as const;

/** A ClickHouse server over HTTP through @clickhouse/client; streams are native (`exec`). */
export class ServerEngine implements Engine {
  readonly backend = 'server' as const;
  readonly location: string;
  private readonly client: ClickHouseClient;

  constructor(options: ServerOptions) {
    const url = new URL(options.url);
    this.location = `ClickHouse server at ${url.origin} (database ${options.database})`;
    this.client = createClient({
      url: options.url,
      username: options.username,
      password: options.password,
      database: options.database,
      max_open_connections: 32,
      request_timeout: 300_000,
      // Times are exchanged as integers of ms or as DateTime64 text in UTC, never in the server's zone.
      // The client sends these with every request; a request's own settings are added to them.
      clickhouse_settings: { session_timezone: 'UTC', ...SESSION_SETTINGS },
    });
  }

  rows<T = Record<string, unknown>>(sql: string, options: QueryOptions = {}): Promise<T[]> {
    return this.parsedRows<T>(sql, 'JSONEachRow', options);
  }

  compactRows<T extends unknown[] = unknown[]>(sql: string, options: QueryOptions = {}): Promise<T[]> {
    return this.parsedRows<T>(sql, 'JSONCompactEachRow', options);
  }

  private parsedRows<T>(sql: string, format: 'JSONEachRow' | 'JSONCompactEachRow', options: QueryOptions): Promise<T[]> {
    return this.guard(async () => {
      const rs = await this.client.query({ query: sql, query_params: options.params, format, abort_signal: options.signal });
      return rs.json<T>();
    });
  }

  async bytes(sql: string, format: string, options: QueryOptions = {}): Promise<Buffer> {
    options.signal?.throwIfAborted();
    const chunks: Buffer[] = [];
    for await (const chunk of this.stream(sql, format, options)) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  async command(sql: string, options: QueryOptions = {}): Promise<void> {
    await this.guard(() => this.client.command({ query: sql, query_params: options.params, abort_signal: options.signal }));
  }

  async insertJsonEachRow(table: string, body: string | Buffer, settings?: Settings): Promise<void> {
    if (!body.length) return;
    if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(table)) throw new Error(`invalid table name ${JSON.stringify(table)}`);
    // exec with raw bytes: insert() would JSON-encode each item of a stream for JSON formats.
    await this.guard(async () => {
      const { stream } = await this.client.exec({
        query: `INSERT INTO ${table} FORMAT JSONEachRow`,
        values: Readable.from([typeof body === 'string' ? Buffer.from(body) : body], { objectMode: false }),
        clickhouse_settings: settings,
      });
      await drainStream(stream);
    });
  }

  /**
   * The server cannot read this machine's files: the file's bytes go to a table of its own, as they are
   * (the server decompresses what Content-Encoding names), numbered in file order by one thread.
   */
  async localFile(path: string, format: LocalFileFormat, structure: string, compression: LocalFileCompression): Promise<LocalFile> {
    const table = `_import_file_${randomUUID().replaceAll('-', '')}`;
    const release = () => this.command(`DROP TABLE IF EXISTS ${table}`);
    await this.command(`CREATE TABLE ${table} (${structure}, _n UInt64) ENGINE = MergeTree ORDER BY _n`);
    try {
      await this.guard(async () => {
        const { stream } = await this.client.exec({
          query: `INSERT INTO ${table} SELECT *, rowNumberInAllBlocks() FROM input(${sqlString(structure)}) FORMAT ${format}`,
          values: createReadStream(path),
          // One thread reading the input in order: row numbers are file order.
          clickhouse_settings: { max_threads: 1, max_insert_threads: '1', input_format_parquet_preserve_order: 1 },
          http_headers: compression === 'none' ? {} : { 'Content-Encoding': compression },
        });
        await drainStream(stream);
      });
    } catch (err) {
      await release().catch(() => {});
      throw err;
    }
    return { table, rowNumber: '_n', params: {}, settings: '', release };
  }

  async insertTsv(table: string, columns: readonly string[], body: string | Buffer, settings?: Settings): Promise<void> {
    if (!body.length) return;
    const name = /^[A-Za-z_][A-Za-z0-9_]*$/;
    if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(table) || !columns.every((c) => name.test(c))) throw new Error(`invalid table or column name in ${table}`);
    await this.guard(async () => {
      const { stream } = await this.client.exec({
        query: `INSERT INTO ${table} (${columns.join(', ')}) FORMAT TabSeparated`,
        values: Readable.from([typeof body === 'string' ? Buffer.from(body) : body], { objectMode: false }),
        clickhouse_settings: settings,
      });
      await drainStream(stream);
    });
  }

  stream(sql: string, format: string, options: QueryOptions = {}): Readable {
    // The caller gets its stream synchronously; the HTTP response is piped in once it arrives.
    // Destroying `out` aborts the request and destroys the response, which makes the server cancel
    // the query (the client stops watching abort_signal once exec() has resolved).
    const abort = new AbortController();
    const onAbort = () => out.destroy();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let response: Readable | undefined;
    const out = new Transform({
      transform(chunk: Buffer, _enc, done) {
        // A failure after the first bytes arrives in-band as ClickHouse's tagged exception block.
        if (marker && chunk.includes(marker)) return done(extractErrorAtTheEndOfChunk(chunk, tag));
        done(null, chunk);
      },
    });
    let tag = '';
    let marker: Buffer | undefined;
    out.once('close', () => {
      options.signal?.removeEventListener('abort', onAbort);
      // Before the response: abort the request. After: destroy the response (and so its socket).
      if (response) response.destroy();
      else abort.abort();
    });
    this.client
      .exec({
        query: `${sql}\nFORMAT ${format}`,
        query_params: options.params,
        abort_signal: abort.signal,
        clickhouse_settings: STREAM_SETTINGS,
      })
      .then(({ stream, response_headers }) => {
        response = stream;
        if (out.destroyed) return stream.destroy();
        tag = String(response_headers['x-clickhouse-exception-tag'] ?? '');
        if (tag) marker = Buffer.from(`__exception__\r\n${tag}`);
        stream.once('error', (err) => out.destroy(err));
        stream.pipe(out);
      })
      .catch((err) => out.destroy(isConnectionError(err) ? new EngineUnavailableError('ClickHouse is unreachable', { cause: err }) : err));
    return out;
  }

  /** Other processes may write to the server: unknown. */
  writeEpoch(): null {
    return null;
  }

  async ping(): Promise<boolean> {
    const r = await this.client.ping();
    return r.success;
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (isConnectionError(err)) throw new EngineUnavailableError('ClickHouse is unreachable', { cause: err });
      throw err;
    }
  }
}
