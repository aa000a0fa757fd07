import { mkdirSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { errorText, log } from '../../log.js';

const gzipAsync = promisify(gzip);

export interface ArchiveOptions {
  /** Frames are compressed and appended at least this often … */
  flushEveryMs?: number;
  /** … or once this many characters are waiting. */
  chunkChars?: number;
  /** The venue the files are named after (default `polymarket`; the Kalshi recorder writes `kalshi-…`). */
  venue?: string;
}

export interface ArchiveStats {
  frames: number;
  /** Compressed bytes appended. */
  bytes: number;
  /** Characters received but not yet on disk. */
  pendingChars: number;
  failures: number;
}

/**
 * Raw frames, one per line exactly as received (the recorder prefixes each with its receive time,
 * docs/INGEST.md §3; capture records go in as they are), appended to `<dir>/polymarket-YYYY-MM-DD.jsonl.gz`
 * (UTC day of receipt). Every chunk is written as a complete gzip member with one append: a file is
 * always a valid concatenation of members (which gunzip and `npm run ingest -- replay` read as one
 * stream), and a crash loses at most the last unwritten second, never the file.
 */
export class FrameArchive {
  readonly stats: ArchiveStats = { frames: 0, bytes: 0, pendingChars: 0, failures: 0 };
  private lines: string[] = [];
  private day = '';
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  private readonly flushEveryMs: number;
  private readonly chunkChars: number;
  private readonly venue: string;

  constructor(
    readonly dir: string,
    options: ArchiveOptions = {},
  ) {
    mkdirSync(dir, { recursive: true });
    this.flushEveryMs = options.flushEveryMs ?? 1000;
    this.chunkChars = options.chunkChars ?? 4 * 1024 * 1024;
    this.venue = options.venue ?? 'polymarket';
  }

  /** The file a frame received at `at` (epoch ms) goes to. */
  fileFor(at: number): string {
    return join(this.dir, `${this.venue}-${new Date(at).toISOString().slice(0, 10)}.jsonl.gz`);
  }

  append(frame: string, receivedAt = Date.now()): void {
    const day = this.fileFor(receivedAt);
    if (day !== this.day) {
      this.cut();
      this.day = day;
    }
    this.lines.push(frame);
    this.stats.frames++;
    this.stats.pendingChars += frame.length + 1;
    if (this.stats.pendingChars >= this.chunkChars) this.cut();
    else this.timer ??= setTimeout(() => this.cut(), this.flushEveryMs);
  }

  /** Writes everything appended so far; resolves once it is on disk. */
  async flush(): Promise<void> {
    this.cut();
    await this.writing;
  }

  private cut(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.lines.length === 0) return;
    const lines = this.lines;
    const file = this.day;
    this.lines = [];
    // Appends run one after another so members land in arrival order.
    this.writing = this.writing.then(() => this.write(file, lines));
  }

  private async write(file: string, lines: string[]): Promise<void> {
    const chars = lines.reduce((n, l) => n + l.length + 1, 0);
    const member = await gzipAsync(`${lines.join('\n')}\n`);
    for (let attempt = 0; ; attempt++) {
      try {
        await appendFile(file, member);
        break;
      } catch (err) {
        this.stats.failures++;
        const wait = Math.min(30_000, 500 * 2 ** attempt);
        log.error('archive write failed: frames stay in memory, retrying', { file, frames: lines.length, retry_in_ms: wait, error: errorText(err) });
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    this.stats.bytes += member.length;
    this.stats.pendingChars -= chars;
  }
}
