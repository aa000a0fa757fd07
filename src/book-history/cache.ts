import { DEFAULT_CHECKPOINTS } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import { errorText, log } from '../log.js';
import { partitionPoint } from '../partition-point.js';
import { noticeSpans, noticesTotal, noticesTouching, pointSql, readRanges, segmentsSql } from '../queries/book-segments.js';
import { MAX_TIME_MS } from '../queries/orderbook.js';
import { Directories } from './directories.js';
import { BookEventDecoder, KIND_CHANGE, SIDE_BUY } from './event-decoder.js';
import { GatheredReads } from './gathered-reads.js';
import { type BookSegment, SegmentBuilder } from './segment.js';
import { type GapRange, GapSplitter, SegmentSplitter } from './segment-splitter.js';
import { SegmentStore } from './segment-store.js';
import type { Gap, SnapshotDirectory } from './snapshot-directory.js';

/**
 * Immutable history read once: the segments (a snapshot and the changes up to the next one) that
 * point reads were answered from stay in memory, least recently used out beyond `capacityBytes`,
 * so a backtest stepping through time or a slider asks the engine once per segment, not per instant.
 *
 * A lookup the cache does not hold (a miss) costs one small read: the asset's snapshot directory
 * (snapshot-directory.ts, read once per asset) names the segment holding the instant, and the read
 * takes exactly its events. Misses of one asset that come while earlier ones are read share the next
 * read (gathered-reads.ts): one read of 16 segments costs about what four reads of one do. Segments
 * are read ahead only where access shows a pattern, in the background and after the misses waiting:
 * the next ones when a lookup steps past the end of a segment it just used, and the whole asset when
 * its lookups keep missing.
 *
 * A cached segment is never stale. Every block inserted into book_events, by any process or client,
 * leaves a notice in book_writes (clickhouse/010_book_writes.sql, written by the engine itself): its
 * asset and time span. A segment remembers how many notices touched its span when it was read; it is
 * still what the table holds while that count is unchanged, and a late row anywhere in its span
 * raises the count, so exactly the segments it touches are read again. The count is asked before a
 * cached segment is used, unless the engine knows nothing was written since the last answer
 * (Engine.writeEpoch: the embedded engine is the only writer to its directory).
 *
 * A read and the count of its notices are two queries; a write landing between them could be in the
 * count but not in the read. So the global number of notices is taken before the read and again
 * with the count (the same write epoch, on the embedded engine): when it moved, the read still
 * answers its request but is not kept.
 */

/**
 * Events a point read reads back from T: the checkpoint interval plus room for the snapshot row and
 * the change that shares its (t, seq). book_events holds the changes and the snapshots of an asset
 * in one key range, so these contain the latest snapshot whenever fewer changes than that followed
 * it, which the ingester's checkpoints guarantee (DEFAULT_CHECKPOINTS: every 200). Fewer rows than
 * this means the asset's whole history up to T was read.
 */
export const EVENTS_READ = DEFAULT_CHECKPOINTS.changes + 56;

/**
 * Events a gap read takes per gap before it gives up on the gap it is in: five checkpoint intervals.
 * A longer gap (checkpoints off) is answered by a point read, and then always (SnapshotDirectory.long).
 */
const GAP_EVENTS = 5 * DEFAULT_CHECKPOINTS.changes;

/**
 * Gap reads of one asset that run at once, and the gaps one read takes at most. Two keep both cores
 * of a small machine busy while the misses arriving meanwhile gather for the next read; 32 is the
 * concurrency the bench's lookups run at.
 */
const CONCURRENT_GAP_READS = 2;
const GAPS_PER_READ = 32;

/**
 * Events a read-ahead takes, from the end of the segment a lookup stepped past: ~40 segments at the
 * default checkpoint interval, in one streaming read (8,192 events cost ~17 ms of engine CPU, ~0.4 ms
 * a segment, against ~0.9 ms for a gathered gap read).
 */
export const SEGMENTS_READ = 8192;

/**
 * A lookup steps through time when it misses the segment after one used within the last RECENT_USES
 * uses of the cache (any asset), or a gap at most STEP_GAPS after the asset's previous miss: a
 * backtest stepping slower or faster than its segments. Random instants over an asset of thousands
 * of segments land that close to each other rarely.
 */
const RECENT_USES = 64;
const STEP_GAPS = 8;

/** Segments a fill gathers before it asks for their notices and keeps them (~100k events). */
const FILL_BATCH = 1024;

/**
 * Misses of one asset, at least as many as its hits, after which the whole asset is read ahead
 * (BookCache.fill): random instants over one asset miss nearly every time, and one streaming read of
 * the asset costs ~0.05 ms of engine CPU a segment, a twentieth of a gap read's. A backtest misses
 * once per segment at most, and never starts one.
 */
const FILL_AFTER_MISSES = 32;

/** The share of the capacity snapshot directories may take. */
const DIRECTORY_SHARE = 1 / 8;

export interface BookCacheStats {
  bytes: number;
  segments: number;
  /** Snapshot directories held. */
  directories: number;
  hits: number;
  misses: number;
  /** Gap reads run, and the misses they answered (several share one). */
  gapReads: number;
  gapMisses: number;
  /** Segments dropped because a notice touched them. */
  invalidated: number;
  evicted: number;
  /** Fills and read-aheads started, and the segments they stored. */
  fills: number;
  readAheads: number;
  filled: number;
  /** Misses answered by a point read (no directory, a long gap, a gap read that did not give it). */
  pointReads: number;
}

/** Background work reading ahead (one at a time: it takes most of a core while it runs). */
interface Background {
  assetId: string;
  controller: AbortController;
  done: Promise<void>;
}

export class BookCache {
  private readonly store: SegmentStore;
  private readonly directories: Directories;
  private readonly gapReads: GatheredReads<number, GapRange, BookSegment[]>;
  private readonly counters = {
    hits: 0,
    misses: 0,
    gapReads: 0,
    gapMisses: 0,
    invalidated: 0,
    fills: 0,
    readAheads: 0,
    filled: 0,
    pointReads: 0,
  };
  private running: Background | null = null;

  constructor(
    private readonly engine: Engine,
    readonly capacityBytes: number,
  ) {
    this.directories = new Directories(engine, capacityBytes * DIRECTORY_SHARE, () => this.store.shrink());
    this.store = new SegmentStore(capacityBytes, () => this.directories.bytes);
    this.gapReads = new GatheredReads((assetId, gaps) => this.readGaps(assetId, gaps), CONCURRENT_GAP_READS, GAPS_PER_READ);
  }

  stats(): BookCacheStats {
    const { store, directories } = this;
    return { ...this.counters, bytes: store.bytes + directories.bytes, segments: store.size, directories: directories.size, evicted: store.evicted };
  }

  /** The cached segment answering `at`, checked against the notices first; undefined when there is none. */
  async cached(assetId: string, at: number, signal?: AbortSignal): Promise<BookSegment | undefined> {
    const segment = this.store.find(assetId, at);
    if (!segment) return undefined;
    const epoch = this.engine.writeEpoch();
    if (epoch === null || epoch !== segment.validAtEpoch) {
      if ((await noticesTouching(this.engine, { assetId, lo: segment.start, hi: spanEnd(segment) }, signal)) !== segment.notices) {
        this.counters.invalidated++;
        this.store.remove(segment);
        return undefined;
      }
      segment.validAtEpoch = epoch;
    }
    this.counters.hits++;
    const directory = this.directories.peek(assetId);
    if (directory) directory.hits++;
    this.store.touch(segment);
    return segment;
  }

  /**
   * The segment answering `at`, read: its gap of the asset's snapshot directory, with the other
   * misses of the asset that come meanwhile, kept when nothing was written meanwhile; a point read
   * (not kept) where no gap read gives it. Undefined when neither reaches the instant (reader.ts
   * then reads the base tables). Reading ahead may start, in the background.
   */
  async load(assetId: string, at: number, signal?: AbortSignal): Promise<BookSegment | undefined> {
    this.counters.misses++;
    const directory = this.capacityBytes > 0 ? await this.directories.get(assetId) : undefined;
    if (!directory) return this.pointRead(assetId, at, signal);
    directory.misses++;
    const gap = directory.gap(at);
    if (gap.long) return this.pointRead(assetId, at, signal);
    this.counters.gapMisses++;
    const segment = (await this.gapReads.get(assetId, gap.start, gapRange(gap)))?.find((s) => s.covers(at));
    this.readAheadIfPattern(assetId, gap, directory);
    return segment ?? this.pointRead(assetId, at, signal);
  }

  /** Stops the background work running, if any, and waits for it to end. */
  async close(): Promise<void> {
    this.running?.controller.abort();
    await this.running?.done;
  }

  /** Resolves when no background work runs. */
  async settled(): Promise<void> {
    while (this.running) await this.running.done;
  }

  /**
   * Reads the gaps of one asset (gathered misses) in one read, and keeps their segments when nothing
   * was written meanwhile. A gap the read did not give whole gets none (its lookups do a point read);
   * one that held more than GAP_EVENTS events with no snapshot the directory missed is marked long.
   */
  private async readGaps(assetId: string, gaps: GapRange[]): Promise<Map<number, BookSegment[]>> {
    gaps.sort((a, b) => a.start - b.start);
    this.counters.gapReads++;
    const epoch = this.engine.writeEpoch();
    const before = epoch === null ? await noticesTotal(this.engine) : 0;
    const directory = this.directories.peek(assetId);
    const usualMarket = directory?.market || this.store.market(assetId);
    const limit = gaps.length * GAP_EVENTS;
    const splitter = new GapSplitter(assetId, gaps, usualMarket);
    splitter.push(await readRanges(this.engine, { assetId, ranges: gaps, limit, usualMarket }));
    splitter.finish(splitter.rows === limit);
    if (directory) {
      if (directory.market === '') directory.market = splitter.firstMarket;
      gaps.forEach((gap, i) => {
        if (splitter.rowsIn[i] >= GAP_EVENTS && !splitter.seen.some((t) => t > gap.start && t < gap.end)) directory.markLong(gap.start);
      });
      this.directories.learn(directory, splitter.seen);
    }
    const read = splitter.segments.flatMap((s) => s ?? []);
    if (read.length > 0) await this.keepRead(assetId, read, epoch, before, Infinity);
    this.store.setMarket(assetId, splitter.firstMarket);
    const answers = new Map<number, BookSegment[]>();
    gaps.forEach((gap, i) => splitter.segments[i] && answers.set(gap.start, splitter.segments[i]));
    return answers;
  }

  /**
   * The patterns that start background work on a miss: a lookup stepping past the end of a segment
   * it just used reads the ~40 segments after its own ahead; an asset missing more than it hits is
   * read whole.
   */
  private readAheadIfPattern(assetId: string, gap: Gap, directory: SnapshotDirectory): void {
    const step = directory.lastMiss < 0 ? 0 : gap.index - directory.lastMiss;
    directory.lastMiss = gap.index;
    if (this.running) return;
    const before = gap.start > 0 ? this.store.find(assetId, gap.start - 1) : undefined;
    const stepping = (before !== undefined && before.used > this.store.clock - RECENT_USES) || (step > 0 && step <= STEP_GAPS);
    if (stepping && gap.end !== Infinity) {
      this.counters.readAheads++;
      const startedAt = this.store.clock;
      this.background(assetId, (signal) => this.fillRange(assetId, gap.end, { limit: SEGMENTS_READ }, startedAt, signal));
    } else if (directory.misses >= FILL_AFTER_MISSES && directory.misses >= directory.hits) {
      directory.hits = directory.misses = 0;
      this.counters.fills++;
      this.fill(assetId, gap.start);
    }
  }

  /**
   * Reads the whole asset ahead, in the background: one streaming read from `from` to its newest
   * event, then one from its first event up to `from` (a long read costs a fraction of a miss's per
   * segment). It keeps only what fits in memory held by segments nobody used since it began
   * (SegmentStore.keep): an asset larger than the cache fills what fits and stops there, it does not
   * evict its own segments. A write meanwhile also stops it (what it read is kept only when
   * nothing was written since the read began).
   */
  private fill(assetId: string, from: number): void {
    const startedAt = this.store.clock;
    this.background(
      assetId,
      async (signal) =>
        (await this.fillRange(assetId, from, { last: null }, startedAt, signal)) && (await this.fillRange(assetId, 0, { last: from }, startedAt, signal)),
    );
  }

  /** Runs `work` as the background work; an error is logged, and requests go on. */
  private background(assetId: string, work: (signal: AbortSignal) => Promise<unknown>): void {
    const controller = new AbortController();
    const done = work(controller.signal)
      .then(() => undefined)
      .catch((err: unknown) => {
        if (!controller.signal.aborted) log.warn('book cache fill failed', { asset_id: assetId, error: errorText(err) });
      })
      .finally(() => {
        this.running = null;
      });
    this.running = { assetId, controller, done };
  }

  /**
   * Streams the events from the snapshot before `at` up to `last` (null: the newest), or `limit` of
   * them, keeping their segments batch by batch; where the read stops short of the newest event, the
   * last segment ends before the millisecond of the last event read. Before each chunk it lets the
   * misses waiting be read first (GatheredReads.turn). False when a batch could not be kept all.
   */
  private async fillRange(
    assetId: string,
    at: number,
    bound: { last: number | null } | { limit: number },
    evictUsedUpTo: number,
    signal: AbortSignal,
  ): Promise<boolean> {
    const epoch = this.engine.writeEpoch();
    const before = epoch === null ? await noticesTotal(this.engine, signal) : 0;
    const market = this.directories.peek(assetId)?.market || this.store.market(assetId);
    const last = 'last' in bound ? bound.last : null;
    const params = { asset_id: assetId, at, last: last ?? MAX_TIME_MS, usual_market: market };
    const splitter = new SegmentSplitter(assetId, at, market);
    const stream = this.engine.stream(segmentsSql('limit' in bound ? bound.limit : null), 'RowBinary', { params, signal });
    try {
      for await (const chunk of stream) {
        await this.gapReads.turn();
        splitter.push(chunk as Buffer);
        if (splitter.segments.length >= FILL_BATCH && !(await this.keepFilled(assetId, splitter.take(), epoch, before, evictUsedUpTo, signal))) return false;
      }
      splitter.finish(last !== null || ('limit' in bound && splitter.rows === bound.limit), Infinity);
      return await this.keepFilled(assetId, splitter.take(), epoch, before, evictUsedUpTo, signal);
    } finally {
      stream.destroy();
    }
  }

  /** keepRead for a fill's batch, counting what it added. */
  private async keepFilled(
    assetId: string,
    segments: BookSegment[],
    epoch: number | null,
    before: number,
    evictUsedUpTo: number,
    signal: AbortSignal,
  ): Promise<boolean> {
    if (segments.length === 0) return true;
    const { all, added } = await this.keepRead(assetId, segments, epoch, before, evictUsedUpTo, signal);
    this.counters.filled += added;
    return all;
  }

  /**
   * Keeps the segments of a read (in order) when nothing was written since it began (`epoch` and
   * `before`, taken then), with the count of the notices touching each, evicting only segments
   * used at or before `evictUsedUpTo`. Whether all of them are cached, and how many were added.
   */
  private async keepRead(
    assetId: string,
    segments: BookSegment[],
    epoch: number | null,
    before: number,
    evictUsedUpTo: number,
    signal?: AbortSignal,
  ): Promise<{ all: boolean; added: number }> {
    const lo = segments[0].start;
    const hi = spanEnd(segments[segments.length - 1]);
    const { total, spans } = await noticeSpans(this.engine, { assetId, lo, hi, withTotal: epoch === null }, signal);
    const unchanged = epoch === null ? total === before : this.engine.writeEpoch() === epoch;
    const touching = noticeCounter(spans);
    for (const segment of segments) {
      segment.notices = touching(segment.start, spanEnd(segment));
      segment.validAtEpoch = epoch;
    }
    return unchanged ? this.store.keep(assetId, segments, evictUsedUpTo) : { all: false, added: 0 };
  }

  /**
   * The segment answering `at` from a point read (pointSql), not kept; when the EVENTS_READ events
   * before `at` hold no snapshot, from a read of up to SEGMENTS_READ events forward from the latest
   * snapshot before it, or from the asset's first event (checkpoints off, or an asset's first
   * changes before any book). Undefined when `at` lies further than that from its snapshot.
   */
  private async pointRead(assetId: string, at: number, signal?: AbortSignal): Promise<BookSegment | undefined> {
    this.counters.pointReads++;
    const usualMarket = this.directories.peek(assetId)?.market || this.store.market(assetId);
    const point = await this.pointSegment(assetId, at, usualMarket, signal);
    if (point) return point;
    const params = { asset_id: assetId, at, last: MAX_TIME_MS, usual_market: usualMarket };
    const splitter = new SegmentSplitter(assetId, at, usualMarket);
    splitter.push(await this.engine.bytes(FORWARD_SQL, 'RowBinary', { params, signal }));
    splitter.finish(splitter.rows === SEGMENTS_READ, Infinity);
    return splitter.take().find((s) => s.covers(at));
  }

  /**
   * The segment of a point read (pointSql): the latest snapshot up to `at` and the changes after it
   * up to `at`, ending at the first event after `at`, so it answers `at` as the cached segment
   * holding it would. Undefined when the events read hold no snapshot and more came before them.
   */
  private async pointSegment(assetId: string, at: number, usualMarket: string, signal?: AbortSignal): Promise<BookSegment | undefined> {
    const decoder = new BookEventDecoder(usualMarket);
    const newestFirst: { ms: number; market: string; price: number; size: number; bid: boolean }[] = [];
    const builder = new SegmentBuilder();
    let end = Infinity;
    decoder.feed(await this.engine.bytes(POINT_SQL, 'RowBinary', { params: { asset_id: assetId, at, usual_market: usualMarket }, signal }));
    for (let e = decoder.read(); e !== undefined; e = decoder.read()) {
      const { market } = e;
      if (e.ms > at) end = e.ms;
      else if (builder.snapshot === null) {
        if (e.kind === KIND_CHANGE) newestFirst.push({ ms: e.ms, market, price: e.price, size: e.size, bid: e.bookSide === SIDE_BUY });
        else builder.setSnapshot(e.ms, market, e.bids, e.asks);
      }
    }
    if (decoder.unfinished) throw new Error('book_events read ended inside a row');
    if (builder.snapshot === null && newestFirst.length === EVENTS_READ) return undefined;
    for (let i = newestFirst.length - 1; i >= 0; i--) {
      const c = newestFirst[i];
      builder.addChange(c.ms, c.market, c.price, c.size, c.bid);
    }
    return builder.build(assetId, builder.snapshot?.ms ?? 0, end);
  }
}

const POINT_SQL = pointSql(EVENTS_READ);
const FORWARD_SQL = segmentsSql(SEGMENTS_READ);

/** The last instant of a segment's span, as the engine's DateTime64 holds it. */
const spanEnd = (segment: BookSegment) => Math.min(segment.end, MAX_TIME_MS);

const gapRange = (gap: Gap): GapRange => ({ start: gap.start, end: gap.end, first: gap.first });

/** How many of the notices' spans [min, max] touch [lo, hi]: those starting by hi, less those ending before lo (which all start by hi). */
export function noticeCounter(spans: [number, number][]): (lo: number, hi: number) => number {
  const mins = spans.map(([min]) => min).sort((a, b) => a - b);
  const maxes = spans.map(([, max]) => max).sort((a, b) => a - b);
  return (lo, hi) => countAtMost(mins, hi) - countAtMost(maxes, lo - 1);
}

/** How many values of the sorted `values` are ≤ `x`. */
function countAtMost(values: number[], x: number): number {
  return partitionPoint(0, values.length, (i) => values[i] <= x);
}
