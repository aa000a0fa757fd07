import { partitionPoint } from '../partition-point.js';

/**
 * The times of an asset's snapshots (exchange `book` or checkpoint), read once from
 * book_snapshot_keys (020_book_snapshot_keys.sql): they cut its history into gaps, each the key range
 * of one segment, so a lookup the cache does not hold is answered by a read of exactly its gap.
 *
 * The times are a map, not a promise: a snapshot written after they were read (late data, or the
 * recorder's newest checkpoints) lies inside some gap, and a read of that gap sees it and cuts its
 * segments there (segment-splitter.ts), which also adds it here (learn). A gap read is right whatever
 * the directory misses; it is only longer.
 */
export class SnapshotDirectory {
  /** Ascending, distinct snapshot times. */
  private times: Float64Array;
  /** Starts of the gaps known to hold more events than a gap read takes (answered by point reads). */
  private readonly long = new Set<number>();
  /** The market the asset's events carry (its first read's), left out of the rows of later reads. */
  market = '';
  /** Lookups of the asset answered from a segment, and lookups that read, since it was last filled. */
  hits = 0;
  misses = 0;
  /** The index of the gap the last miss read (Gap.index), -1 before any. */
  lastMiss = -1;

  constructor(
    readonly assetId: string,
    times: Float64Array,
  ) {
    this.times = times;
  }

  /** Memory it holds: 8 bytes a snapshot, and the object. */
  get bytes(): number {
    return this.times.byteLength + 200;
  }

  get size(): number {
    return this.times.length;
  }

  /**
   * The gap holding `at`: from the latest snapshot at or before it (start 0 before the first one)
   * to the next one (end Infinity after the last one). `first`: no snapshot starts it.
   */
  gap(at: number): Gap {
    const times = this.times;
    const lo = partitionPoint(0, times.length, (i) => times[i] <= at);
    const start = lo === 0 ? 0 : times[lo - 1];
    return { start, end: lo < times.length ? times[lo] : Infinity, index: lo, first: lo === 0, long: this.long.has(start) };
  }

  /** The gap starting at `start` holds too many events for a gap read. */
  markLong(start: number): void {
    this.long.add(start);
  }

  /** Adds snapshot times seen in a read (any order; known ones are skipped). */
  learn(seen: readonly number[]): void {
    const fresh = seen.filter((t) => {
      const gap = this.gap(t);
      return gap.first || gap.start !== t;
    });
    if (fresh.length === 0) return;
    const merged = new Float64Array(this.times.length + fresh.length);
    merged.set(this.times);
    merged.set(fresh, this.times.length);
    merged.sort();
    // A gap a new time splits is no longer known to be long.
    for (const t of fresh) this.long.delete(this.gap(t).start);
    let n = 0;
    for (let i = 0; i < merged.length; i++) if (i === 0 || merged[i] !== merged[i - 1]) merged[n++] = merged[i];
    this.times = merged.slice(0, n);
  }
}

/** One segment's key range in a directory: events with start ≤ t < end. */
export interface Gap {
  start: number;
  end: number;
  /** Its place among the directory's gaps (0: before the first snapshot). */
  index: number;
  /** Before the asset's first snapshot: the segment holds no snapshot. */
  first: boolean;
  /** Known to hold more events than a gap read takes. */
  long: boolean;
}
