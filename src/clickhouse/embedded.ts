import { randomUUID } from 'node:crypto';
import { createReadStream, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { drainPending, Session } from 'chdb';
import { parquetMetadata } from 'hyparquet';
import {
  type Engine,
  type LocalFile,
  type LocalFileCompression,
  type LocalFileFormat,
  type QueryOptions,
  type QueryParams,
  SESSION_SETTINGS,
  type Settings,
} from './engine.js';
import { DataDirLockedError, ExportWriteError } from './errors.js';
import { sqlString } from './literals.js';

/**
 * chDB in-process on DATA_DIR. Measured facts (ARCHITECTURE.md): one session runs one query at a
 * time, several sessions on one directory run in parallel, and a query on a session that has an open
 * stream kills that stream. So: a fixed pool of sessions for short statements, handed out one
 * statement at a time, and a fresh session (0.2 ms to open) for the whole life of every stream.
 * Every session gets SESSION_SETTINGS when it opens (a `SET` lasts for the session).
 *
 * Parameters: chdb's own binding (queryBindAsync) runs every parameterized query of the process
 * through one global queue (a libchdb race, see node_modules/chdb/index.js), so one slow query
 * would hold up all others. We bind through the engine's session parameters instead
 * (`SET param_x = '…'`, then `{x:Type}` in the query): the value still never becomes SQL, the
 * engine parses it by its declared type, and sessions run side by side.
 */
export class EmbeddedEngine implements Engine {
  readonly backend = 'embedded' as const;
  readonly location: string;
  private readonly idle: Session[];
  private readonly waiting: ((s: Session) => void)[] = [];
  private closed = false;
  private readonly streams = new Set<Session>();
  private readonly dir: string;

  private constructor(dir: string, sessions: Session[]) {
    this.location = `chDB (embedded) at ${dir}`;
    this.dir = resolve(dir);
    this.idle = sessions;
  }

  static open(dir: string, poolSize: number): EmbeddedEngine {
    mkdirSync(dir, { recursive: true });
    // Refuse before the engine tries: it would print its own multi-line complaint to stderr.
    const holder = lockHolderPid(dir);
    if (holder !== null && holder !== process.pid && isAlive(holder)) throw new DataDirLockedError(dir, holder);
    const sessions: Session[] = [];
    try {
      for (let i = 0; i < poolSize; i++) {
        const session = new Session(dir);
        session.query(setStatement(SESSION_SETTINGS, undefined), 'TSV');
        sessions.push(session);
      }
    } catch (err) {
      sessions.forEach((s) => s.close());
      if (/Cannot lock file|already running/i.test(String((err as Error).message))) {
        throw new DataDirLockedError(dir, lockHolderPid(dir));
      }
      throw err;
    }
    // This process now holds the directory: what a killed predecessor left in the spool goes. Its
    // contents only: the spool itself may be a mount point or a link to another disk.
    const spool = join(dir, EXPORT_SPOOL);
    mkdirSync(spool, { recursive: true });
    for (const entry of readdirSync(spool)) rmSync(join(spool, entry), { recursive: true, force: true });
    return new EmbeddedEngine(dir, sessions);
  }

  rows<T = Record<string, unknown>>(sql: string, options: QueryOptions = {}): Promise<T[]> {
    return this.parsedLines<T>(sql, 'JSONEachRow', options);
  }

  compactRows<T extends unknown[] = unknown[]>(sql: string, options: QueryOptions = {}): Promise<T[]> {
    return this.parsedLines<T>(sql, 'JSONCompactEachRow', options);
  }

  private async parsedLines<T>(sql: string, format: string, options: QueryOptions): Promise<T[]> {
    const text = await this.withSession(async (s) => (await s.queryAsync(withParams(sql, options.params), { format, signal: options.signal })).text());
    const rows: T[] = [];
    for (const line of text.split('\n')) if (line) rows.push(JSON.parse(line) as T);
    return rows;
  }

  /**
   * chDB cannot interrupt a single-shot query: given a signal it only rejects early while the query
   * runs on in the background, on a session the pool would hand out again. So the session stays
   * taken until the query ends, and an abort takes effect then (these results are bounded).
   */
  bytes(sql: string, format: string, options: QueryOptions = {}): Promise<Buffer> {
    return this.withSession(async (s) => {
      options.signal?.throwIfAborted();
      const result = await s.queryAsync(withParams(sql, options.params), { format });
      options.signal?.throwIfAborted();
      const bytes = result.bytes();
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    });
  }

  async command(sql: string, options: QueryOptions = {}): Promise<void> {
    await this.writing(() => this.withSession((s) => s.queryAsync(withParams(sql, options.params), { format: 'TSV', signal: options.signal })));
  }

  async insertJsonEachRow(table: string, body: string | Buffer, settings?: Settings): Promise<void> {
    if (!body.length) return;
    const values = typeof body === 'string' ? Buffer.from(body) : body;
    await this.writing(() => this.withSession((s) => s.insert({ table, values, format: 'JSONEachRow', settings })));
  }

  async insertTsv(table: string, columns: readonly string[], body: string | Buffer, settings?: Settings): Promise<void> {
    if (!body.length) return;
    const values = typeof body === 'string' ? Buffer.from(body) : body;
    await this.writing(() => this.withSession((s) => s.insert({ table, values, format: 'TabSeparated', columns, settings })));
  }

  /**
   * The engine reads the file in place. Its path is a bound parameter (it is the user's); `pread`, not
   * clickhouse-local's default `mmap`: mapped pages of the file count in this process's resident memory
   * (a 240 MB Parquet file read with mmap took ~400 MB more).
   */
  async localFile(path: string, format: LocalFileFormat, structure: string, compression: LocalFileCompression): Promise<LocalFile> {
    const param = `local_file_${++localFiles}`;
    return {
      table: `file({${param}:String}, ${format}, ${sqlString(structure)}, '${compression}')`,
      rowNumber: '_row_number',
      params: { [param]: resolve(path) },
      settings: "storage_file_read_method = 'pread'",
      release: async () => {},
    };
  }

  writeEpoch(): number {
    return writeEpochs.get(this.dir) ?? 0;
  }

  /**
   * Every statement that may write moves the directory's epoch before it starts (a reader checking
   * meanwhile asks the data) and after it ends (a reader that asked during the write asks again).
   */
  private async writing<T>(write: () => Promise<T>): Promise<T> {
    bumpWriteEpoch(this.dir);
    try {
      return await write();
    } finally {
      bumpWriteEpoch(this.dir);
    }
  }

  stream(sql: string, format: string, options: QueryOptions = {}): Readable {
    if (WHOLE_FILE_FORMATS.has(format)) return this.streamViaFile(sql, format, options);
    return this.streamOnOwnSession(options.params, async function* (session, onRelease) {
      const source = session.queryStream(sql, { format, signal: options.signal });
      onRelease(() => source.cancel());
      // One chunk read ahead: chDB computes a chunk only when it is fetched, so without this the
      // engine waits while the consumer works on a chunk and the consumer waits while the engine
      // computes the next (a book export's fold and the engine's read took the sum of their times,
      // not the larger). Back-pressure holds: at most one chunk waits beyond the one consumed.
      const chunks = source[Symbol.asyncIterator]();
      // The fetch ahead may fail while the consumer still holds the previous chunk (a KILL, a failed
      // query), or be left in flight when the consumer stops early (onRelease's cancel ends it): it
      // is marked handled at once, or Node reports an unhandled rejection (stop 34's CI) before the
      // next `await ahead` throws it to the consumer.
      const fetchAhead = () => {
        const p = chunks.next();
        p.catch(() => {});
        return p;
      };
      let ahead = fetchAhead();
      for (let next = await ahead; !next.done; next = await ahead) {
        ahead = fetchAhead();
        // raw() is a Buffer of the chunk's own (typed as Uint8Array): wrapped, not copied.
        const raw = next.value.raw();
        yield Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
      }
    });
  }

  /**
   * chDB writes every streamed chunk of a file format (Parquet) as a complete file of its own, so
   * the concatenation is not one valid file. Such results go to a temporary file first
   * (`INTO OUTFILE`: the engine writes it block by block, memory stays flat) and are streamed from
   * there. Aborting kills the query by a marker in its text. The files are spooled under
   * DATA_DIR/exports (the disk meant for data, not a small /tmp) and whatever a killed process left
   * there is removed at the next open. chDB reports no error when its writer could not write (a full
   * disk, a refused write: the query "succeeds" and leaves a short or empty file, measured on chDB
   * 3.4), so the file is checked whole before its first byte is sent (ExportWriteError otherwise).
   */
  private streamViaFile(sql: string, format: string, options: QueryOptions): Readable {
    const marker = `export-${randomUUID()}`;
    const spool = join(this.dir, EXPORT_SPOOL);
    const kill = () => {
      this.command(`KILL QUERY WHERE query LIKE {m:String} ASYNC`, { params: { m: `%${marker}%` } }).catch(() => {});
    };
    return this.streamOnOwnSession(options.params, async function* (session, onRelease) {
      let complete = false;
      // Destroyed before the file was complete: the query must not run on for nothing.
      onRelease(() => {
        if (!complete) kill();
      });
      options.signal?.addEventListener('abort', kill, { once: true });
      let dir: string | undefined;
      try {
        dir = await mkdtemp(join(spool, 'export-'));
        const file = join(dir, `result.${format.toLowerCase()}`);
        // The file name is ours (mkdtemp), never user input; the query's own values stay parameters.
        await session.queryAsync(`/* ${marker} */ ${sql}\nINTO OUTFILE ${sqlString(file)} TRUNCATE FORMAT ${format}`, { format: 'TSV' });
        if (!(await wholeParquetFile(file))) throw new ExportWriteError(`the engine could not write the whole ${format} file of an export`);
        for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) yield chunk as Buffer;
        complete = true;
      } finally {
        options.signal?.removeEventListener('abort', kill);
        if (dir) await rm(dir, { recursive: true, force: true });
      }
    });
  }

  /**
   * The life of one stream's session, written once. The session is the stream's alone (a query on a
   * session with an open stream kills that stream); it gets the engine's settings and the statement's
   * parameters first (a stream cannot be a multi-statement), is tracked so close() ends it, and is
   * closed when the stream ends, fails or is destroyed, whichever comes first, after the `onRelease`
   * steps `produce` registered (cancel the query, kill it). Readable.from pulls the next chunk only
   * when the consumer wants more, so back-pressure reaches the engine.
   */
  private streamOnOwnSession(
    params: QueryParams | undefined,
    produce: (session: Session, onRelease: (step: () => void) => void) => AsyncGenerator<Buffer>,
  ): Readable {
    if (this.closed) throw new Error('engine is closed');
    const session = new Session(this.dir);
    this.streams.add(session);
    const steps: (() => void)[] = [];
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (const step of steps) step();
      session.close();
      this.streams.delete(session);
    };
    async function* chunks() {
      try {
        await session.queryAsync(setStatement(SESSION_SETTINGS, params), { format: 'TSV' });
        yield* produce(session, (step) => steps.push(step));
      } finally {
        release();
      }
    }
    const out = Readable.from(chunks(), { objectMode: false, highWaterMark: 1 });
    // Destroyed while the generator waits on the engine: its finally would run only after that wait.
    out.once('close', release);
    return out;
  }

  async ping(): Promise<boolean> {
    try {
      await this.rows('SELECT 1 AS ok');
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Resolves once nothing of the engine runs any more. A query in flight cannot be interrupted (see
   * bytes): it runs on an engine thread until it ends, and so does the teardown of its session,
   * which chDB defers behind it. Exiting meanwhile (`process.exit` after a drain) crashed the
   * process (SIGSEGV) or hung it, e.g. with a replay's page read in flight at SIGTERM.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.streams) s.close();
    for (const s of this.idle) s.close();
    this.idle.length = 0;
    await drainPending();
  }

  private async withSession<T>(fn: (s: Session) => Promise<T>): Promise<T> {
    if (this.closed) throw new Error('engine is closed');
    const session = this.idle.pop() ?? (await new Promise<Session>((resolve) => this.waiting.push(resolve)));
    try {
      return await fn(session);
    } finally {
      const next = this.waiting.shift();
      if (next) next(session);
      else if (this.closed) session.close();
      else this.idle.push(session);
    }
  }
}

/** Numbers the parameters of local files (each query may read several). */
let localFiles = 0;

/** Directory of DATA_DIR where whole-file results are spooled (see streamViaFile). */
const EXPORT_SPOOL = 'exports';

/**
 * Write epochs per data directory, for the whole process: every EmbeddedEngine opened on the same
 * directory (the lock admits only this process) shares one, so a write through any of them is seen.
 */
const writeEpochs = new Map<string, number>();
const bumpWriteEpoch = (dir: string) => writeEpochs.set(dir, (writeEpochs.get(dir) ?? 0) + 1);

/** Output formats whose bytes only make sense as one whole file (see streamViaFile): the one the service exports. */
const WHOLE_FILE_FORMATS = new Set(['Parquet']);

/**
 * A Parquet file the engine finished writing: the magic at both ends, a footer whose length fits, that
 * parses, and whose column chunks all lie before it. A write cut short loses the end, where the footer is.
 */
async function wholeParquetFile(path: string): Promise<boolean> {
  const file = await open(path);
  try {
    const { size } = await file.stat();
    if (size < 12) return false;
    const head = Buffer.alloc(4);
    const tail = Buffer.alloc(8);
    await file.read(head, 0, 4, 0);
    await file.read(tail, 0, 8, size - 8);
    const footer = tail.readUInt32LE(0);
    if (head.toString('latin1') !== 'PAR1' || tail.toString('latin1', 4) !== 'PAR1' || footer + 12 > size) return false;
    const end = Buffer.alloc(footer + 8);
    await file.read(end, 0, end.length, size - end.length);
    const metadata = parquetMetadata(end.buffer.slice(end.byteOffset, end.byteOffset + end.length));
    const dataEnd = BigInt(size - end.length);
    return metadata.row_groups.every((group) =>
      group.columns.every(({ meta_data: m }) => !m || (m.dictionary_page_offset ?? m.data_page_offset) + m.total_compressed_size <= dataEnd),
    );
  } catch {
    return false;
  } finally {
    await file.close();
  }
}

/** `SET name = value, …, param_a = '…', …` for the session, or '' when there is nothing to set. */
function setStatement(settings: Settings, params: QueryParams | undefined): string {
  const assignments = Object.entries(settings).map(([name, value]) => `${name} = ${typeof value === 'string' ? sqlString(value) : Number(value)}`);
  for (const [name, value] of Object.entries(params ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`invalid parameter name ${JSON.stringify(name)}`);
    assignments.push(`param_${name} = ${sqlString(paramText(value))}`);
  }
  return assignments.length ? `SET ${assignments.join(', ')}` : '';
}

function withParams(sql: string, params: QueryParams | undefined): string {
  const set = setStatement({}, params);
  return set ? `${set};\n${sql}` : sql;
}

/**
 * A parameter value in the text form the engine parses by the placeholder's type (the same form
 * as HTTP `param_x=`): strings in the Escaped format, arrays as literals, NULL as \N.
 */
function paramText(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  if (typeof value === 'string') return escaped(value);
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? '1' : '0';
  if (Array.isArray(value)) return `[${value.map((v) => (typeof v === 'string' ? sqlString(v) : String(v))).join(',')}]`;
  throw new Error(`unsupported parameter value of type ${typeof value}`);
}

const escaped = (s: string) => s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\0/g, '\\0');

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** ClickHouse writes "PID: <n>" into <dir>/status while it holds the directory (removed on exit). */
function lockHolderPid(dir: string): number | null {
  try {
    const m = /PID:\s*(\d+)/.exec(readFileSync(join(dir, 'status'), 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}
