/**
 * The engine's RowBinary format read straight from the bytes, chunk by chunk, for the decoders of
 * long reads (book events, replay windows): parsing a JSON line per row cost several times what the
 * engine takes to produce it. A subclass reads one row in `row()` with the helpers below; a row that
 * runs past the chunk at hand is read again, whole, once the next chunk arrives.
 */

/** Thrown when a row runs past the bytes at hand. */
const INCOMPLETE = Symbol('incomplete row');

/** The value of every empty Array(Tuple(Float64, Float64)): shared, so read-only. */
const NO_LEVELS: { price: number; size: number }[] = [];

export abstract class RowBinaryReader {
  protected buf: Buffer = Buffer.alloc(0);
  /** The same bytes as `buf`: DataView reads are several times cheaper than Buffer#readDoubleLE (~3 ns against ~15). */
  private view: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));
  protected pos = 0;
  private rest: Buffer | null = null;
  private readonly readRow = () => this.row();

  /** Reads one row at `pos`, advancing it. */
  protected abstract row(): void;

  /** Takes the next chunk, after the unfinished row the previous one left. */
  protected begin(chunk: Buffer): void {
    this.buf = this.rest ? Buffer.concat([this.rest, chunk]) : chunk;
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    this.rest = null;
    this.pos = 0;
  }

  /** Reads the next row; false when it runs past the chunk (it is kept for the next one). */
  protected next(): boolean {
    if (this.pos >= this.buf.length) return false;
    const start = this.pos;
    try {
      this.readRow();
      return true;
    } catch (err) {
      if (err !== INCOMPLETE) throw err;
      this.rest = this.buf.subarray(start);
      this.pos = this.buf.length;
      return false;
    }
  }

  /** True when the stream ended in the middle of a row (a truncated result). */
  get unfinished(): boolean {
    return this.rest !== null && this.rest.length > 0;
  }

  protected need(n: number): void {
    if (this.pos + n > this.buf.length) throw INCOMPLETE;
  }

  /** Float64 at `at`. */
  protected float64(at: number): number {
    return this.view.getFloat64(at, true);
  }

  /** Int64 at `at`, as two 32-bit halves: exact below 2^53. */
  protected int64(at: number): number {
    return this.view.getUint32(at, true) + this.view.getInt32(at + 4, true) * 4_294_967_296;
  }

  /** UInt64 at `at`, as two 32-bit halves: exact below 2^53. */
  protected uint64(at: number): number {
    return this.view.getUint32(at, true) + this.view.getUint32(at + 4, true) * 4_294_967_296;
  }

  /** UInt32 at `at`. */
  protected uint32(at: number): number {
    return this.view.getUint32(at, true);
  }

  /** UInt16 at `at`. */
  protected uint16(at: number): number {
    return this.view.getUint16(at, true);
  }

  protected varUInt(): number {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      this.need(1);
      const byte = this.buf[this.pos++];
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  }

  /** A String: its varint length, then its UTF-8 bytes. */
  protected string(): string {
    const length = this.varUInt();
    if (length === 0) return '';
    this.need(length);
    const end = this.pos + length;
    const s = this.buf.toString('utf8', this.pos, end);
    this.pos = end;
    return s;
  }

  /** An Array(Tuple(Float64, Float64)) as levels; an empty one is the shared NO_LEVELS (no allocation). */
  protected levels(): { price: number; size: number }[] {
    const count = this.varUInt();
    if (count === 0) return NO_LEVELS;
    this.need(count * 16);
    const out: { price: number; size: number }[] = new Array(count);
    for (let i = 0; i < count; i++, this.pos += 16) out[i] = { price: this.float64(this.pos), size: this.float64(this.pos + 8) };
    return out;
  }
}
