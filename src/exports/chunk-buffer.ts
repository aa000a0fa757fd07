/**
 * Text rows written straight into output chunks of about CHUNK_BYTES, for writers that make their
 * bytes in JS (folded books): a chunk is handed over once it is full, or once FLUSH_MS passed since
 * the last one left (rows that come slowly still leave promptly). Each chunk is a new buffer, never
 * one written again, so a chunk handed over stays as it is.
 */
const CHUNK_BYTES = 64 * 1024;
const FLUSH_MS = 50;

export class ChunkBuffer {
  /** Where the next row goes: write at `buf[pos]`, then set `pos` past it. */
  buf: Buffer;
  pos = 0;
  private readonly size: number;
  private full: Buffer[] = [];
  private flushed = performance.now();

  /** `rowBytes`: the most one row can take; `room()` keeps that much free before each row. */
  constructor(private readonly rowBytes: number) {
    this.size = CHUNK_BYTES + rowBytes;
    this.buf = Buffer.allocUnsafe(this.size);
  }

  /** Makes room for one more row (a full chunk is set aside for `take`). */
  room(): void {
    if (this.pos + this.rowBytes > this.size) this.seal();
  }

  /** Latin-1 text at `pos` (headers, constant parts). */
  text(s: string): void {
    this.pos += this.buf.write(s, this.pos, 'latin1');
  }

  /** A chunk is full and waits to be taken. */
  get hasFull(): boolean {
    return this.full.length > 0;
  }

  /** The chunks ready to leave: the full ones, and the current one when it is big or old enough. */
  take(): Buffer[] {
    if (this.pos >= CHUNK_BYTES || (this.pos > 0 && performance.now() - this.flushed >= FLUSH_MS)) this.seal();
    const out = this.full;
    this.full = [];
    return out;
  }

  /** Everything written, the current chunk included: the end of the file. */
  drain(): Buffer[] {
    if (this.pos > 0) this.seal();
    return this.take();
  }

  private seal(): void {
    this.full.push(this.buf.subarray(0, this.pos));
    this.buf = Buffer.allocUnsafe(this.size);
    this.pos = 0;
    this.flushed = performance.now();
  }
}
