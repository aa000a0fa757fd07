import type { EventRange } from '../queries/book-segments.js';
import { type BookEvent, BookEventDecoder, KIND_CHANGE, SIDE_BUY } from './event-decoder.js';
import { type BookSegment, SegmentBuilder } from './segment.js';

/**
 * Reads of book_events cut into segments at each snapshot as their rows are decoded, chunk by
 * chunk: a forward read from the snapshot before an instant (SegmentSplitter), or a read of several
 * gaps of a snapshot directory at once (GapSplitter).
 */

/** The segments being built from one run of rows, and where the current one starts. */
class Cutter {
  readonly builder = new SegmentBuilder();
  start = 0;

  constructor(
    private readonly assetId: string,
    private readonly out: BookSegment[],
  ) {}

  /** A snapshot at `ms`: the segment before it ends there (when it holds anything or starts earlier). */
  snapshot(e: BookEvent): void {
    if (!this.builder.empty || this.start !== e.ms) {
      this.close(e.ms);
      this.start = e.ms;
    }
    this.builder.setSnapshot(e.ms, e.market, e.bids, e.asks);
  }

  change(e: BookEvent): void {
    this.builder.addChange(e.ms, e.market, e.price, e.size, e.bookSide === SIDE_BUY);
  }

  close(end: number): void {
    if (this.start < end) this.out.push(this.builder.build(this.assetId, this.start, end));
    else this.builder.clear();
  }
}

/**
 * A read of segmentsSql. The read starts at the latest snapshot at or before `at`; when there is
 * none it starts at the asset's first event, and the first segment then begins at 0 (instants before
 * any event have no book).
 */
export class SegmentSplitter {
  /** Segments complete, not taken yet. */
  segments: BookSegment[] = [];
  rows = 0;
  /** The first row's market. */
  firstMarket = '';
  private readonly decoder: BookEventDecoder;
  private readonly cutter: Cutter;
  private lastMs = 0;

  /** `usualMarket`: the value bound to {usual_market} in the read (BookEventDecoder). */
  constructor(
    assetId: string,
    private readonly at: number,
    usualMarket: string,
  ) {
    this.decoder = new BookEventDecoder(usualMarket);
    this.cutter = new Cutter(assetId, this.segments);
  }

  push(chunk: Buffer): void {
    const { cutter, decoder } = this;
    decoder.feed(chunk);
    for (let e = decoder.read(); e !== undefined; e = decoder.read()) {
      if (this.rows++ === 0) {
        cutter.start = e.kind === KIND_CHANGE || e.ms > this.at ? 0 : e.ms;
        this.firstMarket = e.market;
      }
      if (e.kind === KIND_CHANGE) cutter.change(e);
      else cutter.snapshot(e);
      this.lastMs = e.ms;
    }
  }

  /**
   * Closes the last segment at `stop`, where the read was bounded (the next cached segment, or
   * Infinity when it reached the newest events); when it was `cut` short instead (its LIMIT, or an
   * upper bound in time), before the millisecond of its last row (more events of it may follow).
   */
  finish(cut: boolean, stop: number): void {
    if (this.decoder.unfinished) throw new Error('book_events read ended inside a row');
    if (!cut) this.cutter.close(stop);
    else if (this.rows > 0) {
      this.cutter.builder.dropFrom(this.lastMs);
      this.cutter.close(this.lastMs);
    }
  }

  /** The segments complete so far, in order; they are then forgotten here. */
  take(): BookSegment[] {
    return this.segments.splice(0);
  }
}

/** A gap of a snapshot directory as read (readRanges): `first` when no snapshot starts it. */
export interface GapRange extends EventRange {
  first: boolean;
}

/**
 * A read of several gaps (readRanges, in order), each cut into its segments: a gap starts with its
 * snapshot (changes of the same millisecond before it are held by it, so they are skipped), or at 0
 * before the asset's first one; a snapshot inside a gap (written after the directory was read) cuts
 * it again, and is reported in `seen`. A gap whose snapshot is not where the directory said gets
 * no segments (undefined), nor do the gap a read cut short (`limit` reached) and those after it.
 */
export class GapSplitter {
  /** Per gap, its segments in order; undefined when the read did not give it whole. */
  readonly segments: (BookSegment[] | undefined)[];
  /** Snapshot times inside the gaps: new to the directory. */
  readonly seen: number[] = [];
  /** Rows read per gap. */
  readonly rowsIn: number[];
  rows = 0;
  firstMarket = '';
  /** The gap of the last row read, -1 before any. */
  lastGap = -1;
  private readonly decoder: BookEventDecoder;
  private cutter: Cutter | null = null;
  /** Gap index of the row at hand; its state: not begun, begun (cutter), or failed. */
  private gap = 0;
  private failed = false;

  constructor(
    private readonly assetId: string,
    private readonly gaps: readonly GapRange[],
    usualMarket: string,
  ) {
    this.decoder = new BookEventDecoder(usualMarket);
    this.segments = gaps.map(() => undefined);
    this.rowsIn = gaps.map(() => 0);
  }

  push(chunk: Buffer): void {
    const { decoder, gaps } = this;
    decoder.feed(chunk);
    for (let e = decoder.read(); e !== undefined; e = decoder.read()) {
      if (this.rows++ === 0) this.firstMarket = e.market;
      while (this.gap < gaps.length && e.ms >= gaps[this.gap].end) this.endGap();
      const gap = gaps[this.gap];
      // Outside every gap: the read asked for none such.
      if (gap === undefined || e.ms < gap.start) throw new Error('book_events read returned a row outside its ranges');
      this.lastGap = this.gap;
      this.rowsIn[this.gap]++;
      if (this.failed) continue;
      if (this.cutter === null && !this.begin(gap, e)) continue;
      const cutter = this.cutter!;
      if (e.kind === KIND_CHANGE) cutter.change(e);
      else {
        if (e.ms !== gap.start || gap.first) this.seen.push(e.ms);
        cutter.snapshot(e);
      }
    }
  }

  /** Every gap the read reached its end of gets its segments; `cut`: the read stopped at its LIMIT. */
  finish(cut: boolean): void {
    if (this.decoder.unfinished) throw new Error('book_events read ended inside a row');
    if (cut) {
      // The gap of the last row, and the ones after it, may have more rows than were read.
      for (let i = Math.max(this.lastGap, 0); i < this.gaps.length; i++) this.segments[i] = undefined;
      return;
    }
    while (this.gap < this.gaps.length) this.endGap();
  }

  /**
   * The first row of a gap read: a gap before the first snapshot starts at 0 with whatever comes;
   * any other starts with its snapshot. False to skip the row.
   */
  private begin(gap: GapRange, e: BookEvent): boolean {
    const out: BookSegment[] = [];
    if (gap.first) {
      this.cutter = new Cutter(this.assetId, out);
    } else if (e.kind !== KIND_CHANGE && e.ms === gap.start) {
      this.cutter = new Cutter(this.assetId, out);
      this.cutter.start = e.ms;
    } else {
      // A change of the snapshot's millisecond before it is held by the snapshot; anything else
      // means the snapshot is not where the directory said (rows deleted): no segments for this gap.
      if (e.kind !== KIND_CHANGE || e.ms !== gap.start) this.failed = true;
      return false;
    }
    this.segments[this.gap] = out;
    return true;
  }

  /** The gap at hand is complete: its last segment ends where the gap does. */
  private endGap(): void {
    const gap = this.gaps[this.gap];
    if (this.cutter) this.cutter.close(gap.end);
    else if (gap.first && !this.failed) {
      // No event before the asset's first snapshot: no book there.
      const out: BookSegment[] = [];
      new Cutter(this.assetId, out).close(gap.end);
      this.segments[this.gap] = out;
    }
    this.cutter = null;
    this.failed = false;
    this.gap++;
  }
}
