import { randomBytes, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  type BrotliCompress,
  createBrotliCompress,
  createBrotliDecompress,
  createDeflate,
  createGunzip,
  createGzip,
  createInflate,
  type Deflate,
  type Gzip,
} from 'node:zlib';
import { TupleParam } from '@clickhouse/client';
import { Session } from 'chdb';

/**
 * A loopback server speaking the part of ClickHouse's HTTP interface that @clickhouse/client 1.x uses
 * (query, command, exec, insert, ping), executing every request on chDB in a session of its own. It lets
 * the suite run the real HTTP code path of the client (TEST_BACKEND=http) on a machine without a server.
 *
 * Measured on chdb 3.4 / engine 26.7, and shaping this file:
 * - Only SELECT-like statements stream (`queryStream`); anything else must run with `queryAsync`.
 * - `SET` in a session persists for the session's later statements, so URL settings become one `SET`.
 * - The stream's AbortSignal is only looked at between chunks; `KILL QUERY ... ASYNC` from another session
 *   stops a query that is still computing its first block within ~100 ms, so a disconnect does both.
 *   (A real server cancels on disconnect only with readonly > 0 and cancel_http_readonly_queries_on_client_close
 *   = 1, which ServerEngine.stream sends; this server cancels every query whose client went away.)
 * - A fetch in flight when the client goes away still yields its chunk: nothing may then wait for the closed
 *   response (it never emits 'drain' or 'close' again), or the query stays open with nobody to end it.
 * - chDB's binder takes JS values and escapes strings itself, while HTTP sends values already in
 *   ClickHouse's escaped text form: each `param_` is decoded once (see decodeParam).
 */

const SERVER_VERSION = '26.7.2.1';

export interface ClickHouseHttpServer {
  url: string;
  port: number;
  close(): Promise<void>;
  /** On: every connection is reset, open ones included (an outage). Off: serve again. */
  setUnavailable(on: boolean): void;
  /** SQL of the statements chDB is executing right now (the INSERT statement without its data). */
  runningQueries(): string[];
}

// URL parameters ClickHouse's HTTP handler consumes itself; every other parameter is a setting.
const HANDLER_PARAMS = new Set([
  'query',
  'query_id',
  'database',
  'default_format',
  'session_id',
  'session_timeout',
  'session_check',
  'close_session',
  'user',
  'password',
  'quota_key',
  'role',
  'compress',
  'decompress',
  'buffer_size',
  'wait_end_of_query',
  'stacktrace',
  'client_protocol_version',
]);

// chDB is built with clickhouse-local defaults; a server has these. Set first, so URL settings override.
const SERVER_DEFAULTS: Record<string, string> = {
  // JSON formats quote (U)Int64 on a server: a client reading numbers must convert them.
  output_format_json_quote_64bit_integers: '1',
  // A server parses DateTime input strictly ('YYYY-MM-DD hh:mm:ss' or a unix time), chDB best-effort.
  date_time_input_format: 'basic',
  // A server inserts synchronously unless asked: deduplication and read-after-write depend on it.
  async_insert: '0',
  // A server rejects a bare expression that chDB would run as a SELECT.
  implicit_select: '0',
};

// HTTP status per exception, as ClickHouse's HTTPHandler maps them; everything else is 500.
const STATUS_BY_ERROR: Record<string, number> = Object.fromEntries([
  ...['REQUIRED_PASSWORD'].map((n) => [n, 401]),
  ...['UNKNOWN_USER', 'WRONG_PASSWORD', 'AUTHENTICATION_FAILED', 'SET_NON_GRANTED_ROLE'].map((n) => [n, 403]),
  ...[
    'BAD_ARGUMENTS',
    'CANNOT_COMPILE_REGEXP',
    'CANNOT_PARSE_TEXT',
    'CANNOT_PARSE_ESCAPE_SEQUENCE',
    'CANNOT_PARSE_QUOTED_STRING',
    'CANNOT_PARSE_DATE',
    'CANNOT_PARSE_DATETIME',
    'CANNOT_PARSE_NUMBER',
    'CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING',
    'CANNOT_PARSE_IPV4',
    'CANNOT_PARSE_IPV6',
    'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
    'CANNOT_PARSE_UUID',
    'DUPLICATE_COLUMN',
    'ILLEGAL_COLUMN',
    'UNKNOWN_ELEMENT_IN_AST',
    'UNKNOWN_TYPE_OF_AST_NODE',
    'THERE_IS_NO_DEFAULT_VALUE',
    'TOO_DEEP_AST',
    'TOO_BIG_AST',
    'UNEXPECTED_AST_STRUCTURE',
    'SYNTAX_ERROR',
    'INCORRECT_DATA',
    'TYPE_MISMATCH',
    'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
  ].map((n) => [n, 400]),
  ...[
    'UNKNOWN_TABLE',
    'UNKNOWN_FUNCTION',
    'UNKNOWN_IDENTIFIER',
    'UNKNOWN_TYPE',
    'UNKNOWN_STORAGE',
    'UNKNOWN_DATABASE',
    'UNKNOWN_SETTING',
    'UNKNOWN_DIRECTION_OF_SORTING',
    'UNKNOWN_AGGREGATE_FUNCTION',
    'UNKNOWN_FORMAT',
    'UNKNOWN_DATABASE_ENGINE',
    'UNKNOWN_TYPE_OF_QUERY',
    'UNKNOWN_ROLE',
  ].map((n) => [n, 404]),
  ['QUERY_IS_TOO_LARGE', 413],
  ['NOT_IMPLEMENTED', 501],
  ['SOCKET_TIMEOUT', 503],
  ['CANNOT_OPEN_FILE', 503],
  ['CANNOT_SCHEDULE_TASK', 503],
  ['TIMEOUT_EXCEEDED', 504],
]);

/** A ClickHouse exception: what the body says, and what the client's parseError reads back. */
class ServerError extends Error {
  constructor(
    readonly code: number,
    readonly type: string,
    readonly text: string,
  ) {
    super(`Code: ${code}. DB::Exception: ${text}. (${type}) (version ${SERVER_VERSION})`);
  }

  get status(): number {
    return STATUS_BY_ERROR[this.type] ?? 500;
  }

  /** chDB messages are ClickHouse's, sometimes wrapped in themselves ("Code: 108. DB::Exception: Code: 108..."). */
  static from(err: unknown): ServerError {
    if (err instanceof ServerError) return err;
    const message = err instanceof Error ? err.message : String(err);
    const codes = [...message.matchAll(/Code: (\d+)\. DB::Exception: /g)];
    const type = /\(([A-Z][A-Z0-9_]{2,})\)\s*$/.exec(message)?.[1];
    if (codes.length === 0 || !type) return new ServerError(1001, 'STD_EXCEPTION', message);
    const last = codes[codes.length - 1];
    const text = message.slice(last.index + last[0].length).replace(/(?:\.? ?\((?:[A-Z][A-Z0-9_]{2,}|version [^)]*)\))+\s*$/, '');
    return new ServerError(Number(last[1]), type, text);
  }
}

interface ParsedRequest {
  /** What runs: the URL query, a newline, then the body (for INSERT: the statement, then its data). */
  sql: string;
  /** The statement alone (the INSERT without its data): what runningQueries() reports. */
  statement: string;
  params: Record<string, unknown>;
  settings: Record<string, string>;
  database?: string;
  queryId: string;
  format: string;
  compression?: 'gzip' | 'deflate' | 'br';
}

interface Running {
  statement: string;
  /** Marker carried in log_comment so another session can KILL the query (chDB has no settable query_id). */
  marker: string;
}

export async function startClickHouseHttpServer(opts: { dataDir: string; port?: number }): Promise<ClickHouseHttpServer> {
  const { dataDir } = opts;
  // chDB starts its engine for a directory with the first session on it and stops it when the last one
  // closes: a request alone on the directory paid that start, 20-100 ms (measured), where a server
  // answers SELECT 1 in about a millisecond. This idle session keeps the engine up for the server's life.
  const keeper = new Session(dataDir);
  const running = new Set<Running>();
  const sockets = new Set<Socket>();
  const handlers = new Set<Promise<void>>();
  let unavailable = false;

  // Every handler and KILL owns a session on dataDir: close() waits for them all.
  const track = (work: Promise<void>) => {
    handlers.add(work);
    void work.finally(() => handlers.delete(work));
  };
  const server = createServer((req, res) => {
    track(
      handle(req, res).catch((err) => {
        if (!res.headersSent) sendError(res, ServerError.from(err), randomUUID());
        else res.destroy();
      }),
    );
  });
  // ClickHouse's keep_alive_timeout is 10 s; the client keeps idle sockets 2.5 s, well inside it.
  server.keepAliveTimeout = 10_000;
  server.on('connection', (socket) => {
    if (unavailable) return socket.destroy();
    // A response goes out as several writes (head, chunks, end): with Nagle's algorithm a write after
    // the first may wait for the client's delayed ACK (up to 40 ms). Measured with SELECT 1 through
    // the @clickhouse/client: 72 ms before, 35 ms with this alone, ~10 ms with the idle session too.
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.on('error', () => {});
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/ping' || (url.pathname === '/' && req.method === 'GET' && !url.searchParams.has('query'))) {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=UTF-8' }).end('Ok.\n');
      return;
    }
    if (url.pathname !== '/') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=UTF-8' }).end(`There is no handle ${url.pathname}\n\nUse / or /ping for health checks.\n`);
      return;
    }
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const queryId = url.searchParams.get('query_id') || randomUUID();
    let q: ParsedRequest;
    let spooled: string | undefined;
    try {
      const input = await spoolInputInsert(url, req);
      spooled = input?.path;
      q = parseRequest(input?.url ?? url, req.headers, input ? Buffer.alloc(0) : await readBody(req), queryId);
    } catch (err) {
      if (spooled) await rm(spooled, { force: true });
      return sendError(res, ServerError.from(err), queryId);
    }
    try {
      await respond(q, res, abort);
    } finally {
      if (spooled) await rm(spooled, { force: true });
    }
  }

  async function respond(q: ParsedRequest, res: ServerResponse, abort: AbortController): Promise<void> {
    if (abort.signal.aborted) return;
    if (isEmptyInsert(q.sql)) {
      // A server inserts nothing from an empty body; chDB (clickhouse-local) would say NO_DATA_TO_INSERT.
      res.writeHead(200, responseHeaders(q, summary())).end();
      return;
    }
    const session = new Session(dataDir);
    try {
      await execute(session, q, res, abort.signal);
    } finally {
      session.close();
    }
  }

  async function execute(session: Session, q: ParsedRequest, res: ServerResponse, signal: AbortSignal): Promise<void> {
    const entry: Running = { statement: q.statement, marker: `http-query-${randomUUID()}` };
    try {
      await prepareSession(session, q, entry.marker);
    } catch (err) {
      return sendError(res, ServerError.from(err), q.queryId);
    }
    if (signal.aborted) return;
    const kill = () => track(killQuery(dataDir, entry.marker));
    signal.addEventListener('abort', kill, { once: true });
    running.add(entry);
    try {
      // chDB writes each streamed chunk of a file format as a whole file: those results go out in one piece.
      if (isStreamable(q.sql) && !WHOLE_FILE_FORMATS.has(q.format)) await streamResult(session, q, res, signal);
      else await bufferedResult(session, q, res);
    } finally {
      running.delete(entry);
      signal.removeEventListener('abort', kill);
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    setUnavailable(on: boolean) {
      unavailable = on;
      if (on) for (const socket of sockets) socket.destroy();
    },
    runningQueries: () => [...running].map((r) => r.statement),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      while (handlers.size > 0) await Promise.allSettled([...handlers]);
      keeper.close();
    },
  };
}

const WHOLE_FILE_FORMATS = new Set(['Parquet', 'ORC', 'Arrow', 'Avro']);

/** SET the server defaults, then the request's settings (bound, so no value enters SQL), then its database. */
async function prepareSession(session: Session, q: ParsedRequest, marker: string): Promise<void> {
  // log_comment carries the kill marker unless the client chose its own (then only the AbortSignal cancels).
  const settings: Record<string, string> = { ...SERVER_DEFAULTS, log_comment: marker, ...q.settings };
  const names = Object.keys(settings);
  const bad = names.find((n) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(n));
  if (bad) throw new ServerError(115, 'UNKNOWN_SETTING', `Unknown setting '${bad}'`);
  const params = Object.fromEntries(names.map((n, i) => [`s${i}`, settings[n]]));
  await session.queryBindAsync(`SET ${names.map((n, i) => `${n} = {s${i}:String}`).join(', ')}`, params);
  if (q.database) await session.queryBindAsync('USE {db:Identifier}', { db: q.database });
}

/** Chunks go out as chDB produces them, each only once the socket took the previous one. */
async function streamResult(session: Session, q: ParsedRequest, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const hasParams = Object.keys(q.params).length > 0;
  const options = { format: q.format, signal };
  const exceptionTag = randomBytes(8).toString('hex');
  let body: ResponseBody | undefined;
  try {
    const chunks = hasParams ? session.queryStreamBind(q.sql, q.params, options) : session.queryStream(q.sql, options);
    for await (const chunk of chunks) {
      // Leaving the loop cancels the chDB stream (the iterator's finally).
      if (signal.aborted) return;
      body ??= new ResponseBody(res, q, { 'X-ClickHouse-Exception-Tag': exceptionTag });
      await body.write(chunk.raw(), signal);
    }
    (body ?? new ResponseBody(res, q, { 'X-ClickHouse-Exception-Tag': exceptionTag })).end();
  } catch (err) {
    if (signal.aborted) return;
    const error = ServerError.from(err);
    if (!body) return sendError(res, error, q.queryId);
    // The status line is gone: ClickHouse appends a tagged exception block and never finishes the chunked
    // body, so a client that does not look for the block still fails instead of reading a short result.
    const message = `${error.message}\n`;
    const block = `\r\n__exception__\r\n${exceptionTag}\r\n${message}${Buffer.byteLength(message)} ${exceptionTag}\r\n__exception__\r\n`;
    body.breakWith(Buffer.from(block));
  }
}

/** Statements chDB cannot stream (DDL, INSERT, SHOW, ...) run to completion; their output, if any, is small. */
async function bufferedResult(session: Session, q: ParsedRequest, res: ServerResponse): Promise<void> {
  const started = process.hrtime.bigint();
  let bytes: Uint8Array;
  let rows: number;
  try {
    // No signal: a settled promise would not stop the engine; a disconnect KILLs the query instead.
    const result =
      Object.keys(q.params).length > 0
        ? await session.queryBindAsync(q.sql, q.params, { format: q.format })
        : await session.queryAsync(q.sql, { format: q.format });
    bytes = result.bytes();
    rows = result.rowsRead;
  } catch (err) {
    return sendError(res, ServerError.from(err), q.queryId);
  }
  const body = new ResponseBody(res, q, {}, summary(rows, process.hrtime.bigint() - started));
  if (bytes.length > 0) body.writeLast(bytes);
  else body.end();
}

/** The response body, compressed when the client asked; back-pressure comes from the socket. */
class ResponseBody {
  private readonly compressor?: Gzip | Deflate | BrotliCompress;

  constructor(
    private readonly res: ServerResponse,
    q: ParsedRequest,
    extra: Record<string, string>,
    summaryHeader = summary(),
  ) {
    res.writeHead(200, {
      ...responseHeaders(q, summaryHeader),
      ...extra,
      ...(q.compression ? { 'Content-Encoding': q.compression } : {}),
    });
    if (q.compression) {
      const compressor = createCompressor(q.compression);
      compressor.on('data', (data: Buffer) => {
        if (!res.write(data)) compressor.pause();
      });
      compressor.once('end', () => res.end());
      res.on('drain', () => compressor.resume());
      this.compressor = compressor;
    }
  }

  async write(data: Uint8Array, signal: AbortSignal): Promise<void> {
    if (this.compressor) {
      this.compressor.write(data);
      // Flush per chunk: the client must see rows as they come, not when the compressor's window fills.
      // The flush completes once the socket took the compressed bytes (the compressor pauses meanwhile).
      await untilAborted(new Promise<void>((resolve) => this.compressor!.flush(() => resolve())), signal);
    } else if (!this.res.write(data)) {
      await drained(this.res, signal);
    }
  }

  writeLast(data: Uint8Array): void {
    if (this.compressor) this.compressor.end(data);
    else this.res.end(data);
  }

  end(): void {
    if (this.compressor) this.compressor.end();
    else this.res.end();
  }

  /** Writes `data`, then closes the socket without the final empty chunk: the client sees a broken body. */
  breakWith(data: Buffer): void {
    const closeSocket = () => this.res.socket?.end();
    if (!this.compressor) {
      this.res.write(data);
      closeSocket();
      return;
    }
    this.compressor.removeAllListeners('data').removeAllListeners('end');
    this.compressor.on('data', (out: Buffer) => this.res.write(out));
    this.compressor.once('end', closeSocket);
    this.compressor.resume();
    this.compressor.end(data);
  }
}

// Both waits settle at once on an aborted signal: 'abort' does not fire twice, and a closed response
// emits neither 'drain' nor 'close' again.
function untilAborted(work: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const finish = () => {
      signal.removeEventListener('abort', finish);
      resolve();
    };
    signal.addEventListener('abort', finish, { once: true });
    void work.then(finish);
  });
}

function drained(res: ServerResponse, signal: AbortSignal): Promise<void> {
  if (signal.aborted || res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const finish = () => {
      res.off('drain', finish);
      res.off('close', finish);
      signal.removeEventListener('abort', finish);
      resolve();
    };
    res.once('drain', finish);
    res.once('close', finish);
    signal.addEventListener('abort', finish, { once: true });
  });
}

/**
 * Stops the marked query wherever it is (even inside its first block); a no-op once it ended. Not bound:
 * chdb runs every queryBindAsync of the process in one queue, where a KILL would wait behind any long
 * parameterized statement. The marker is this server's own `http-query-<uuid>`, never a client's text.
 */
async function killQuery(dataDir: string, marker: string): Promise<void> {
  const session = new Session(dataDir);
  try {
    await session.queryAsync(`KILL QUERY WHERE Settings['log_comment'] = '${marker}' ASYNC`);
  } catch {
    // The query ended on its own, or the engine is closing: nothing left to stop.
  } finally {
    session.close();
  }
}

function sendError(res: ServerResponse, error: ServerError, queryId: string): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(error.status, {
    'Content-Type': 'text/plain; charset=UTF-8',
    'X-ClickHouse-Server-Display-Name': hostname(),
    'X-ClickHouse-Query-Id': queryId,
    'X-ClickHouse-Timezone': 'UTC',
    'X-ClickHouse-Exception-Code': String(error.code),
  });
  res.end(`${error.message}\n`);
}

function responseHeaders(q: ParsedRequest, summaryHeader: string): Record<string, string> {
  return {
    'Content-Type': contentType(q.format),
    'X-ClickHouse-Server-Display-Name': hostname(),
    'X-ClickHouse-Query-Id': q.queryId,
    'X-ClickHouse-Format': q.format,
    'X-ClickHouse-Timezone': 'UTC',
    'X-ClickHouse-Summary': summaryHeader,
  };
}

function summary(readRows = 0, elapsedNs = 0n): string {
  return JSON.stringify({
    read_rows: String(readRows),
    read_bytes: '0',
    written_rows: '0',
    written_bytes: '0',
    total_rows_to_read: '0',
    result_rows: '0',
    result_bytes: '0',
    elapsed_ns: String(elapsedNs),
  });
}

function contentType(format: string): string {
  if (/^(TabSeparated|TSV)/i.test(format)) return 'text/tab-separated-values; charset=UTF-8';
  if (/^CSV/i.test(format)) return `text/csv; charset=UTF-8; header=${/WithNames/i.test(format) ? 'present' : 'absent'}`;
  if (/^JSON/i.test(format)) return 'application/json; charset=UTF-8';
  if (/^(Native|RowBinary|Parquet|Arrow|ORC|Avro|MsgPack|Protobuf|CapnProto|BSON)/i.test(format)) return 'application/octet-stream';
  return 'text/plain; charset=UTF-8';
}

/**
 * `INSERT … SELECT … FROM input('structure') FORMAT F` with the data in the body (ServerEngine.localFile):
 * chDB takes a query as text, so a binary body (Parquet, a compressed file) cannot follow it. The body is
 * written to a file as it came (Content-Encoding names its compression) and the statement reads that
 * file instead, as a server reads the body. Undefined for every other request.
 */
async function spoolInputInsert(url: URL, req: IncomingMessage): Promise<{ url: URL; path: string } | undefined> {
  const m = /^(INSERT\s+INTO\s[\s\S]+?)\binput\(('(?:[^'\\]|\\.)*')\)\s+FORMAT\s+(\w+)\s*$/i.exec(url.searchParams.get('query') ?? '');
  if (!m) return undefined;
  const encoding = req.headers['content-encoding'] ?? 'none';
  if (!['none', 'gzip', 'zstd', 'deflate', 'br'].includes(encoding)) throw new ServerError(36, 'BAD_ARGUMENTS', `Unknown HTTP compression method: ${encoding}`);
  const path = join(tmpdir(), `clickhouse-input-${randomUUID()}`);
  await pipeline(req, createWriteStream(path));
  const rewritten = new URL(url);
  rewritten.searchParams.set('query', `${m[1]}file('${path}', ${m[3]}, ${m[2]}, '${encoding}')`);
  return { url: rewritten, path };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const encoding = req.headers['content-encoding'];
  const source = encoding ? req.pipe(createDecompressor(encoding)) : req;
  const chunks: Buffer[] = [];
  for await (const chunk of source) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function createDecompressor(encoding: string): Transform {
  if (encoding === 'gzip') return createGunzip();
  if (encoding === 'deflate') return createInflate();
  if (encoding === 'br') return createBrotliDecompress();
  throw new ServerError(36, 'BAD_ARGUMENTS', `Unknown HTTP compression method: ${encoding}`);
}

function createCompressor(encoding: 'gzip' | 'deflate' | 'br'): Gzip | Deflate | BrotliCompress {
  if (encoding === 'gzip') return createGzip();
  if (encoding === 'deflate') return createDeflate();
  return createBrotliCompress();
}

function parseRequest(url: URL, headers: IncomingHttpHeaders, body: Buffer, queryId: string): ParsedRequest {
  const fields = new Map<string, string>(url.searchParams);
  let data = body.toString('utf8');
  const boundary = /^multipart\/form-data;.*boundary=("?)([^";]+)\1/i.exec(headers['content-type'] ?? '')?.[2];
  if (boundary) {
    // The client moves long query_params (and then the query) into a multipart body.
    for (const [name, value] of parseMultipart(data, boundary)) fields.set(name, value);
    data = '';
  }
  const urlQuery = fields.get('query') ?? '';
  const sql = urlQuery && data ? `${urlQuery}\n${data}` : urlQuery || data;
  if (!sql.trim()) throw new ServerError(62, 'SYNTAX_ERROR', 'Empty query');
  const statement = urlQuery || data;
  const types = placeholderTypes(statement);
  const params: Record<string, unknown> = {};
  const settings: Record<string, string> = {};
  for (const [name, value] of fields) {
    if (name.startsWith('param_')) params[name.slice(6)] = decodeParam(value, types.get(name.slice(6)));
    else if (!HANDLER_PARAMS.has(name)) settings[name] = value;
  }
  const database = fields.get('database') ?? headers['x-clickhouse-database']?.toString();
  return {
    sql,
    statement,
    params,
    settings,
    database: database && database !== 'default' ? database : undefined,
    queryId,
    format: outputFormat(statement) ?? fields.get('default_format') ?? headers['x-clickhouse-format']?.toString() ?? 'TabSeparated',
    compression: responseCompression(settings.enable_http_compression, headers['accept-encoding']),
  };
}

function parseMultipart(body: string, boundary: string): [string, string][] {
  const parts: [string, string][] = [];
  for (const part of body.split(`--${boundary}`)) {
    const split = part.indexOf('\r\n\r\n');
    const name = /name="([^"]+)"/.exec(part.slice(0, split))?.[1];
    if (split < 0 || !name) continue;
    parts.push([name, part.slice(split + 4).replace(/\r\n$/, '')]);
  }
  return parts;
}

function responseCompression(enabled: string | undefined, accept: string | undefined): ParsedRequest['compression'] {
  if (enabled !== '1' && enabled !== 'true') return undefined;
  const offered = (accept ?? '').split(',').map((e) => e.trim().split(';')[0].toLowerCase());
  return (['gzip', 'deflate', 'br'] as const).find((e) => offered.includes(e));
}

const LEADING_NOISE = /^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*/;

/** chDB streams SELECT-like statements only. */
function isStreamable(sql: string): boolean {
  return /^(?:SELECT|WITH)\b|^\(/i.test(sql.replace(LEADING_NOISE, ''));
}

function isInsert(sql: string): boolean {
  return /^INSERT\b/i.test(sql.replace(LEADING_NOISE, ''));
}

function isEmptyInsert(sql: string): boolean {
  return isInsert(sql) && /\bFORMAT\s+\w+\s*$/i.test(sql);
}

/** A statement's own trailing FORMAT is its output format (chDB applies it too); an INSERT's is its input's. */
function outputFormat(statement: string): string | undefined {
  if (isInsert(statement)) return undefined;
  return /\bFORMAT\s+([A-Za-z0-9_]+)\s*;?\s*$/i.exec(statement)?.[1];
}

/** The declared type of each {name:Type} placeholder. */
function placeholderTypes(sql: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const m of sql.matchAll(/\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^{}]+?)\s*\}/g)) {
    if (!types.has(m[1])) types.set(m[1], m[2]);
  }
  return types;
}

/**
 * A param_ value arrives in ClickHouse's escaped text form (what the server parses for the declared type).
 * chDB's binder re-encodes JS values: strings TSV-escaped, arrays/tuples/maps as literals with quoted
 * strings. So scalars are unescaped and composites parsed back to JS values; chDB then hands the engine
 * text that parses to the same value.
 */
function decodeParam(text: string, type: string | undefined): unknown {
  if (text === '\\N') return null;
  let inner = type ?? 'String';
  let wrapped: RegExpExecArray | null;
  while ((wrapped = /^(?:Nullable|LowCardinality)\((.*)\)$/s.exec(inner))) inner = wrapped[1];
  if (/^(Array|Tuple|Map|Nested)\(/i.test(inner)) return new LiteralParser(text).parseAll();
  return unescapeText(text);
}

const ESCAPES: Record<string, string> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', 0: '\0' };
// Like ClickHouse's parser, an unknown escape keeps its backslash ('100\%' stays as written) except before these.
const DROPS_BACKSLASH = new Set(['\\', "'", '"', '`', '/', '=']);

function unescapeText(text: string): string {
  return text.replace(/\\(x[0-9A-Fa-f]{2}|[\s\S])/g, (sequence, c: string) => {
    if (c.length === 3) return String.fromCharCode(parseInt(c.slice(1), 16));
    return ESCAPES[c] ?? (DROPS_BACKSLASH.has(c) ? c : sequence);
  });
}

/** Reads a ClickHouse literal ([..], (..), {k:v}, '..', numbers, NULL, true/false) into JS values. */
class LiteralParser {
  private i = 0;

  constructor(private readonly text: string) {}

  parseAll(): unknown {
    const value = this.value();
    this.skipSpace();
    if (this.i !== this.text.length) throw this.error();
    return value;
  }

  private value(): unknown {
    this.skipSpace();
    const c = this.text[this.i];
    if (c === '[') return this.list(']');
    if (c === '(') return new TupleParam(this.list(')'));
    if (c === '{') return this.map();
    if (c === "'") return this.quoted();
    const token = /^[^,\])}:\s]+/.exec(this.text.slice(this.i))?.[0];
    if (!token) throw this.error();
    this.i += token.length;
    if (/^null$/i.test(token)) return null;
    if (/^(true|false)$/i.test(token)) return token.toLowerCase() === 'true';
    if (/^[+-]?\d+$/.test(token)) return BigInt(token);
    const n = Number(token);
    if (Number.isNaN(n)) throw this.error();
    return n;
  }

  private list(close: string): unknown[] {
    this.i++;
    const items: unknown[] = [];
    this.skipSpace();
    if (this.text[this.i] === close) {
      this.i++;
      return items;
    }
    for (;;) {
      items.push(this.value());
      this.skipSpace();
      const c = this.text[this.i++];
      if (c === close) return items;
      if (c !== ',') throw this.error();
    }
  }

  private map(): Map<unknown, unknown> {
    this.i++;
    const map = new Map<unknown, unknown>();
    this.skipSpace();
    if (this.text[this.i] === '}') {
      this.i++;
      return map;
    }
    for (;;) {
      const key = this.value();
      this.skipSpace();
      if (this.text[this.i++] !== ':') throw this.error();
      map.set(key, this.value());
      this.skipSpace();
      const c = this.text[this.i++];
      if (c === '}') return map;
      if (c !== ',') throw this.error();
    }
  }

  private quoted(): string {
    let raw = '';
    for (this.i++; this.i < this.text.length; this.i++) {
      const c = this.text[this.i];
      if (c === '\\') raw += c + (this.text[++this.i] ?? '');
      else if (c === "'") {
        this.i++;
        return unescapeText(raw);
      } else raw += c;
    }
    throw this.error();
  }

  private skipSpace(): void {
    while (/\s/.test(this.text[this.i] ?? '')) this.i++;
  }

  private error(): ServerError {
    return new ServerError(457, 'BAD_QUERY_PARAMETER', `Cannot parse query parameter value ${this.text}`);
  }
}
