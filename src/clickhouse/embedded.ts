import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Session } from 'chdb';
import type { Engine, QueryOptions, Settings } from './engine.js';
import { DataDirLockedError } from './errors.js';

/**
 * chDB in-process on DATA_DIR. Measured facts (ARCHITECTURE.md): one session runs one query at a
 * time, several sessions on one directory run in parallel, and a query on a session that has an open
 * stream kills that stream. So: a fixed pool of sessions for short statements, handed out one
 * statement at a time, and a fresh session (0.2 ms to open) for the whole life of every stream.
 */
export class EmbeddedEngine implements Engine {
  readonly backend = 'embedded' as const;
  readonly location: string;
  private readonly idle: Session[];
  private readonly waiting: ((s: Session) => void)[] = [];
  private closed = false;
  private readonly streams = new Set<Session>();

  private constructor(
    private readonly dir: string,
    sessions: Session[],
  ) {
    this.location = `chDB (embedded) at ${dir}`;
    this.idle = sessions;
  }

  static open(dir: string, poolSize: number): EmbeddedEngine {
    mkdirSync(dir, { recursive: true });
    const sessions: Session[] = [];
    try {
      for (let i = 0; i < poolSize; i++) sessions.push(new Session(dir));
    } catch (err) {
      sessions.forEach((s) => s.close());
      if (/Cannot lock file|already running/i.test(String((err as Error).message))) {
        throw new DataDirLockedError(dir, lockHolderPid(dir));
      }
      throw err;
    }
    return new EmbeddedEngine(dir, sessions);
  }

  async rows<T = Record<string, unknown>>(sql: string, options: QueryOptions = {}): Promise<T[]> {
    const text = await this.withSession(async (s) =>
      (await s.queryBindAsync(sql, options.params ?? {}, { format: 'JSONEachRow', signal: options.signal })).text(),
    );
    const rows: T[] = [];
    for (const line of text.split('\n')) if (line) rows.push(JSON.parse(line) as T);
    return rows;
  }

  async command(sql: string, options: QueryOptions = {}): Promise<void> {
    await this.withSession((s) => s.queryBindAsync(sql, options.params ?? {}, { format: 'TSV', signal: options.signal }));
  }

  async insertJsonEachRow(table: string, body: string, settings?: Settings): Promise<void> {
    if (!body) return;
    await this.withSession((s) => s.insert({ table, values: Buffer.from(body), format: 'JSONEachRow', settings }));
  }

  stream(sql: string, format: string, options: QueryOptions = {}): Readable {
    if (this.closed) throw new Error('engine is closed');
    const session = new Session(this.dir);
    this.streams.add(session);
    const source = session.queryStreamBind(sql, options.params ?? {}, { format, signal: options.signal });
    const release = () => {
      source.cancel();
      session.close();
      this.streams.delete(session);
    };
    async function* chunks() {
      try {
        for await (const chunk of source) yield Buffer.from(chunk.raw());
      } finally {
        release();
      }
    }
    // Readable.from pulls the next chunk only when the consumer wants more: back-pressure reaches
    // the engine, and destroying the stream runs the finally above, which cancels the query.
    const out = Readable.from(chunks(), { objectMode: false, highWaterMark: 1 });
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

  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.streams) s.close();
    for (const s of this.idle) s.close();
    this.idle.length = 0;
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

/** ClickHouse writes "PID: <n>" into <dir>/status while it holds the directory. */
function lockHolderPid(dir: string): number | null {
  try {
    const m = /PID:\s*(\d+)/.exec(readFileSync(join(dir, 'status'), 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}
