import type { Level } from '../book/index.js';

/** Writes one level's bytes at `pos` of a buffer with room for them; returns the position after. */
export type LevelWriter = (buf: Buffer, pos: number, level: Level) => number;

/** No byte between two levels (CSV levels start with their own comma). */
export const NO_SEPARATOR = -1;

/**
 * The bytes of one side's top levels in a book export, written from the previous row's where they
 * can be. Writing a level costs two numbers (~25 ns), and from one row to the next a side keeps
 * most of its top levels (on the bench's largest asset, 1.9 of 10 are new per row and side), so the
 * levels the previous row had are copied from its bytes, a run at a time, and only new ones are
 * written. A level object is never changed (OrderBook replaces it), so the same object has the
 * same bytes: levels are matched by identity, and a miss only costs a fresh write.
 *
 * The previous row's bytes are read where they were written: a chunk is never written again once
 * it holds rows (textChunks allocates a new one), and nothing after a side overwrites it.
 */
export class SideText {
  private prev: Buffer = Buffer.alloc(0);
  /** Where each level of the previous row starts and ends in `prev`. */
  private starts: Int32Array;
  private ends: Int32Array;
  /** The same for the row being written; swapped with the above after it. */
  private nextStarts: Int32Array;
  private nextEnds: Int32Array;
  private levels: Level[] = [];
  private count = 0;

  constructor(
    private readonly depth: number,
    private readonly writeLevel: LevelWriter,
    /** A byte written between two levels, or NO_SEPARATOR. */
    private readonly separator: number,
  ) {
    this.starts = new Int32Array(depth);
    this.ends = new Int32Array(depth);
    this.nextStarts = new Int32Array(depth);
    this.nextEnds = new Int32Array(depth);
  }

  /** The first `depth` of `levels`, written at `pos` (room for them assumed); returns the position after. */
  write(buf: Buffer, pos: number, levels: readonly Level[]): number {
    const present = Math.min(this.depth, levels.length);
    const { prev, starts, ends, nextStarts, nextEnds, separator } = this;
    const old = this.levels;
    const oldCount = this.count;
    let j = 0;
    for (let i = 0; i < present; ) {
      if (i > 0 && separator !== NO_SEPARATOR) buf[pos++] = separator;
      const level = levels[i];
      // The previous row's level j is gone and the next one follows: skip it.
      if (j + 1 < oldCount && old[j] !== level && old[j + 1] === level) j++;
      if (j < oldCount && old[j] === level) {
        // A run of the previous row's levels, in the same order (separators between them included).
        const from = starts[j];
        const shift = pos - from;
        do {
          nextStarts[i] = starts[j] + shift;
          nextEnds[i++] = ends[j++] + shift;
        } while (i < present && j < oldCount && old[j] === levels[i]);
        pos = copy(prev, from, ends[j - 1], buf, pos);
      } else {
        nextStarts[i] = pos;
        pos = this.writeLevel(buf, pos, level);
        nextEnds[i++] = pos;
        // The same price with a new size replaces the previous row's level j.
        if (j < oldCount && old[j].price === level.price) j++;
      }
    }
    // This row's bytes become the ones the next row copies from.
    this.prev = buf;
    this.starts = nextStarts;
    this.ends = nextEnds;
    this.nextStarts = starts;
    this.nextEnds = ends;
    for (let i = 0; i < present; i++) if (old[i] !== levels[i]) old[i] = levels[i];
    this.count = present;
    return pos;
  }
}

/** One call into V8's own copy (~20 ns whatever the length; a JS loop costs ~2.5 ns a byte). */
function copy(src: Buffer, from: number, to: number, dst: Buffer, pos: number): number {
  // The previous row in the chunk before this one: only on a chunk's first row.
  if (src !== dst) dst.set(src.subarray(from, to), pos);
  else dst.copyWithin(pos, from, to);
  return pos + to - from;
}
