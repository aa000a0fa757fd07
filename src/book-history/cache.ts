import { DEFAULT_CHECKPOINTS } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import { errorText, log } from '../log.js';
import { BINARY_EVENT_COLUMNS } from '../queries/book-event-columns.js';
import { MAX_TIME_MS, POINT_READ } from '../queries/orderbook.js';
import { BookEventDecoder, KIND_CHANGE, SIDE_BUY } from './event-decoder.js';
import { type BookSegment, SegmentBuilder } from './segment.js';

/**
 * Immutable history read once: the segments (a snapshot and the changes up to the next one) that
 * point reads were answered from stay in memory, least recently used out beyond `capacityBytes`,
 * so a backtest stepping through time or a slider asks the engine once per segment, not per instant.
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
 * Events a point read (POINT_SQL) reads back from T: the checkpoint interval plus room for the
 * snapshot row and the change that shares its (t, seq). book_events holds the changes and the
 * snapshots of an asset in one key range, so these contain the latest snapshot whenever fewer
 * changes than that followed it, which the ingester's checkpoints guarantee (DEFAULT_CHECKPOINTS:
 * every 200). Fewer rows than this means the asset's whole history up to T was read.
 */
export const EVENTS_READ = DEFAULT_CHECKPOINTS.changes + 56;

/**
 * Events one miss reads forward from the snapshot before T: ~40 segments at the default checkpoint
 * interval. A read's cost is mostly fixed (finding the snapshot key, opening the part): measured on
 * the bench's largest asset, 8,192 events cost ~17 ms of CPU and 1,024 ~13 ms, so a miss reads far
 * ahead and random instants fill the cache at a fraction of a point read per segment. An instant
 * further than that from its snapshot (checkpoints off, or as many events in one millisecond) is
 * answered by the fallback read (book-reader.ts).
 */
export const SEGMENTS_READ = 8192;

/** Segments a fill gathers before it asks for their notices and keeps them (~100k events). */
const FILL_BATCH = 1024;

/**
 * Misses of one asset, at least as many as its hits, after which the whole asset is read ahead
 * (BookCache.fill). Random instants over a large asset miss nearly every time and each miss pays
 * the read's fixed cost for ~40 segments; a backtest misses once per ~40 lookups and never starts one.
 */
const FILL_AFTER_MISSES = 32;

/**
 * Point reads of an asset being filled that run at once; more wait their turn. Each costs a few
 * times what the fill spends per segment, and every core they take from the fill delays the moment
 * all lookups of the asset are answered from memory (measured, 32 clients on 2 cores: unbounded,
 * the fill of the largest bench asset took ~20 s instead of ~4).
 */
const POINT_READS_WHILE_FILLING = 1;

/**
 * The latest snapshot at or before {at} (none: the asset's first event) and the events after it up
 * to {last}, in (t, seq) order, as RowBinary (BookEventDecoder), at most `limit` (a fill streams
 * them all: one read of the whole asset cost half the engine CPU of 65,536-event reads): one
 * primary-key range read. No sort key beyond the table's: `kind` as a third one made the engine
 * sort the whole rest of the asset (178 ms instead of 14 ms at 4,096 rows).
 *
 * A checkpoint shares the (t, seq) of the change it follows, and already holds it. At the first
 * snapshot that change is left out by the WHERE (it could come before its snapshot in the result).
 * At later ones it lands either just before its snapshot, at the previous segment's end (where no
 * instant of that segment applies it), or just after it, where applying it sets a level to the size
 * the snapshot already gives it: the same book either way.
 */
const segmentsSql = (limit: number | null) => `
WITH (SELECT (t, seq) FROM book_events
      WHERE asset_id = {asset_id:String} AND kind != 'price_change' AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
      ORDER BY t DESC, seq DESC LIMIT 1) AS k
SELECT ${BINARY_EVENT_COLUMNS}
FROM book_events
WHERE asset_id = {asset_id:String} AND t >= assumeNotNull(k).1 AND t <= fromUnixTimestamp64Milli({last:Int64}, 'UTC')
  AND (t > assumeNotNull(k).1 OR seq > assumeNotNull(k).2 OR (seq = assumeNotNull(k).2 AND kind != 'price_change'))
ORDER BY t, seq
${limit === null ? '' : `LIMIT ${limit}`}
SETTINGS ${POINT_READ}`;

/**
 * The last EVENTS_READ events up to {at}, newest first (they hold its latest snapshot, see
 * EVENTS_READ), and the first event after {at}: a miss while the asset is being filled costs about
 * a point read. Each branch keeps its order; a row after {at} tells itself apart by its time.
 */
const POINT_SQL = `
SELECT * FROM (
  SELECT ${BINARY_EVENT_COLUMNS} FROM book_events
  WHERE asset_id = {asset_id:String} AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
  ORDER BY t DESC, seq DESC LIMIT ${EVENTS_READ})
UNION ALL
SELECT * FROM (
  SELECT ${BINARY_EVENT_COLUMNS} FROM book_events
  WHERE asset_id = {asset_id:String} AND t > fromUnixTimestamp64Milli({at:Int64}, 'UTC')
  ORDER BY t, seq LIMIT 1)
SETTINGS ${POINT_READ}`;

/** Notices ever written, all assets: part metadata, no data read; merges keep the sum. */
const NOTICES_TOTAL = `(SELECT sum(rows) FROM system.parts WHERE database = currentDatabase() AND table = 'book_writes' AND active)`;

const TOTAL_SQL = `SELECT ${NOTICES_TOTAL} AS total SETTINGS output_format_json_quote_64bit_integers = 0`;

/** The spans of the notices touching [lo, hi], and the total when other processes may write. */
const spansSql = (withTotal: boolean) => `
SELECT ${withTotal ? NOTICES_TOTAL : '0'} AS total, groupArray((toUnixTimestamp64Milli(t_min), toUnixTimestamp64Milli(t_max))) AS spans
FROM book_writes
WHERE asset_id = {asset_id:String} AND t_min <= fromUnixTimestamp64Milli({hi:Int64}, 'UTC') AND t_max >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC')
SETTINGS output_format_json_quote_64bit_integers = 0, ${POINT_READ}`;

/** How many notices touch one segment's span. */
const COUNT_SQL = `
SELECT count() AS n
FROM book_writes
WHERE asset_id = {asset_id:String} AND t_min <= fromUnixTimestamp64Milli({hi:Int64}, 'UTC') AND t_max >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC')
SETTINGS output_format_json_quote_64bit_integers = 0, ${POINT_READ}`;

/** The last instant of a segment's span, as the engine's DateTime64 holds it. */
const spanEnd = (segment: BookSegment) => Math.min(segment.end, MAX_TIME_MS);

export interface BookCacheStats {
  bytes: number;
  segments: number;
  hits: number;
  misses: number;
  /** Segments dropped because a notice touched them. */
  invalidated: number;
  evicted: number;
  /** Fills started, and the segments they stored. */
  fills: number;
  filled: number;
  /** Misses answered by a point read while their asset was being filled. */
  pointReads: number;
}

/** What the cache holds and knows of one asset; dropped with its last segment. */
interface AssetEntry {
  /** Its cached segments, by start. */
  segments: BookSegment[];
  /** The market its events carry (its first read's), left out of the rows of later reads. */
  market: string;
  /** Lookups answered from a segment, and lookups that read, since it was last filled. */
  hits: number;
  misses: number;
}

/** The fill running (one at a time: it takes most of a core while it runs). */
interface Fill {
  assetId: string;
  controller: AbortController;
  done: Promise<void>;
}

export class BookCache {
  private readonly assets = new Map<string, AssetEntry>();
  /** Insertion order is recency: a hit moves its segment to the end. */
  private readonly lru = new Map<BookSegment, true>();
  private readonly counters = { bytes: 0, hits: 0, misses: 0, invalidated: 0, evicted: 0, fills: 0, filled: 0, pointReads: 0 };
  /** Counts stores and hits: BookSegment.used. */
  private clock = 0;
  private running: Fill | null = null;
  private readonly pointReadTurns = new Turns(POINT_READS_WHILE_FILLING);

  constructor(
    private readonly engine: Engine,
    readonly capacityBytes: number,
  ) {}

  stats(): BookCacheStats {
    return { ...this.counters, segments: this.lru.size };
  }

  /** The cached segment answering `at`, checked against the notices first; undefined when there is none. */
  async cached(assetId: string, at: number, signal?: AbortSignal): Promise<BookSegment | undefined> {
    const segment = this.find(assetId, at);
    if (!segment) return undefined;
    const epoch = this.engine.writeEpoch();
    if (epoch === null || epoch !== segment.validAtEpoch) {
      const [{ n }] = await this.engine.rows<{ n: number }>(COUNT_SQL, { params: { asset_id: assetId, lo: segment.start, hi: spanEnd(segment) }, signal });
      if (Number(n) !== segment.notices) {
        this.counters.invalidated++;
        this.remove(segment);
        return undefined;
      }
      segment.validAtEpoch = epoch;
    }
    this.counters.hits++;
    const entry = this.assets.get(assetId);
    if (entry) entry.hits++;
    this.lru.delete(segment);
    this.lru.set(segment, true);
    segment.used = ++this.clock;
    return segment;
  }

  /**
   * Reads the segments from the snapshot before `at` on, keeps them when nothing was written
   * meanwhile, and returns the one answering `at`. An asset that misses often is then filled.
   */
  async load(assetId: string, at: number, signal?: AbortSignal): Promise<BookSegment | undefined> {
    this.counters.misses++;
    // Its asset is being filled: the fill reads this instant soon, in a read far cheaper per
    // segment than a miss's, so the request gets the book of a point read, not kept.
    if (this.running?.assetId === assetId) {
      const segment = await this.pointReadTurns.run(() =>
        pointRead(this.engine, { asset_id: assetId, at, usual_market: this.assets.get(assetId)?.market ?? '' }, signal),
      );
      if (segment) {
        this.counters.pointReads++;
        return segment;
      }
    }
    // Up to the next cached segment: history already held is not read again.
    const segments = await this.read(assetId, at, this.nextStart(assetId, at), SEGMENTS_READ, signal);
    const entry = this.assets.get(assetId);
    if (entry && ++entry.misses >= FILL_AFTER_MISSES && entry.misses >= entry.hits && !this.running) this.fill(assetId, at);
    return segments.find((s) => s.covers(at));
  }

  /** Stops the fill running, if any, and waits for it to end. */
  async close(): Promise<void> {
    this.running?.controller.abort();
    await this.running?.done;
  }

  /** Resolves when no fill runs. */
  async settled(): Promise<void> {
    while (this.running) await this.running.done;
  }

  /**
   * Reads the whole asset ahead, in the background: one streaming read from `from` to its newest
   * event, then one from its first event up to `from` (a long read costs a fraction of a miss's per
   * segment). It keeps only what fits in memory held by segments nobody used since it began
   * (BookCache.keep): an asset larger than the cache fills what fits and stops there, it does not
   * evict its own segments. A write meanwhile also stops it (what it read is kept only when
   * nothing was written since the read began); an error is logged, and requests go on.
   */
  private fill(assetId: string, from: number): void {
    const entry = this.assets.get(assetId)!;
    entry.hits = entry.misses = 0;
    this.counters.fills++;
    const controller = new AbortController();
    const run = async () => {
      const startedAt = this.clock;
      (await this.fillRange(assetId, from, null, startedAt, controller.signal)) && (await this.fillRange(assetId, 0, from, startedAt, controller.signal));
    };
    const done = run()
      .catch((err: unknown) => {
        if (!controller.signal.aborted) log.warn('book cache fill failed', { asset_id: assetId, error: errorText(err) });
      })
      .finally(() => {
        this.running = null;
      });
    this.running = { assetId, controller, done };
  }

  /**
   * Streams the events from the snapshot before `at` up to `last` (null: the newest), keeping their
   * segments batch by batch; up to `last`, the last segment ends before the millisecond of the last
   * event read. False when a batch could not be kept all.
   */
  private async fillRange(assetId: string, at: number, last: number | null, evictUsedUpTo: number, signal: AbortSignal): Promise<boolean> {
    const epoch = this.engine.writeEpoch();
    const before = epoch === null ? await this.noticesTotal(signal) : 0;
    const market = this.assets.get(assetId)?.market ?? '';
    const params = { asset_id: assetId, at, last: last ?? MAX_TIME_MS, usual_market: market };
    const splitter = new SegmentSplitter(assetId, at, market);
    const stream = this.engine.stream(segmentsSql(null), 'RowBinary', { params, signal });
    try {
      for await (const chunk of stream) {
        splitter.push(chunk as Buffer);
        if (splitter.segments.length >= FILL_BATCH && !(await this.keepFilled(assetId, splitter.take(), epoch, before, evictUsedUpTo, signal))) return false;
      }
      splitter.finish(last !== null, Infinity);
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

  /** Notices ever written (TOTAL_SQL): taken before a read when other processes may write. */
  private async noticesTotal(signal?: AbortSignal): Promise<number> {
    return Number((await this.engine.rows<{ total: number }>(TOTAL_SQL, { signal }))[0].total);
  }

  /**
   * Reads up to `limit` events from the snapshot before `at` up to `stop` (exclusive; Infinity: the
   * newest event) and cuts them into segments, kept when nothing was written meanwhile (least
   * recently used ones out); they answer the request either way.
   */
  private async read(assetId: string, at: number, stop: number, limit: number, signal?: AbortSignal): Promise<BookSegment[]> {
    const epoch = this.engine.writeEpoch();
    const before = epoch === null ? await this.noticesTotal(signal) : 0;
    const last = Math.min(stop, MAX_TIME_MS + 1) - 1;
    const market = this.assets.get(assetId)?.market ?? '';
    const splitter = new SegmentSplitter(assetId, at, market);
    splitter.push(await this.engine.bytes(segmentsSql(limit), 'RowBinary', { params: { asset_id: assetId, at, last, usual_market: market }, signal }));
    splitter.finish(splitter.rows === limit, stop);
    const segments = splitter.take();
    if (segments.length > 0) await this.keepRead(assetId, segments, epoch, before, Infinity, signal);
    const entry = this.assets.get(assetId);
    if (entry && entry.market === '') entry.market = splitter.firstMarket;
    return segments;
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
    const [{ total, spans }] = await this.engine.rows<{ total: number; spans: [number, number][] }>(spansSql(epoch === null), {
      params: { asset_id: assetId, lo, hi },
      signal,
    });
    const unchanged = epoch === null ? Number(total) === before : this.engine.writeEpoch() === epoch;
    const touching = noticeCounter(spans);
    for (const segment of segments) {
      segment.notices = touching(segment.start, spanEnd(segment));
      segment.validAtEpoch = epoch;
    }
    return unchanged ? this.keep(assetId, segments, evictUsedUpTo) : { all: false, added: 0 };
  }

  /** Start of the first cached segment after `at` (Infinity when none). */
  private nextStart(assetId: string, at: number): number {
    const list = this.assets.get(assetId)?.segments;
    return list?.[lastStartingAtOrBefore(list, at) + 1]?.start ?? Infinity;
  }

  private find(assetId: string, at: number): BookSegment | undefined {
    const list = this.assets.get(assetId)?.segments;
    if (!list) return undefined;
    const i = lastStartingAtOrBefore(list, at);
    return i >= 0 && list[i].covers(at) ? list[i] : undefined;
  }

  /**
   * Keeps the segments of one read (in order), least recently used segments out beyond the
   * capacity, except segments used after `evictUsedUpTo`: the segment that would need one of them
   * out, and those after it, are not kept (a fill stops rather than evict what it or a request just
   * touched). Whether all of them are cached, and how many were added.
   */
  private keep(assetId: string, segments: BookSegment[], evictUsedUpTo: number): { all: boolean; added: number } {
    let entry = this.assets.get(assetId);
    if (!entry) this.assets.set(assetId, (entry = { segments: [], market: '', hits: 0, misses: 0 }));
    // Taken out of the LRU and the byte count at once, out of the sorted lists once at the end:
    // a read keeps hundreds of segments, and a splice each was quadratic in the asset's length.
    const dropped = new Set<BookSegment>();
    const added: BookSegment[] = [];
    const drop = (old: BookSegment) => {
      dropped.add(old);
      this.lru.delete(old);
      this.counters.bytes -= old.bytes;
    };
    let all = true;
    for (const segment of segments) {
      // Those it overlaps were read before it (an unfinished one, or one a late write replaced).
      const replaced = this.overlapping(entry.segments, segment).filter((s) => !dropped.has(s));
      // One that holds all of it stays (a fill reads through what misses cached; the end of its
      // last read is cut short): it is checked against the notices before every use anyway.
      const [old] = replaced;
      if (replaced.length === 1 && old.start <= segment.start && segment.end <= old.end) continue;
      let excess = this.counters.bytes + segment.bytes - replaced.reduce((sum, s) => sum + s.bytes, 0) - this.capacityBytes;
      const evicted: BookSegment[] = [];
      for (const oldest of this.lru.keys()) {
        if (excess <= 0 || oldest.used > evictUsedUpTo) break;
        if (replaced.includes(oldest)) continue;
        evicted.push(oldest);
        excess -= oldest.bytes;
      }
      if (excess > 0) {
        all = false;
        if (evictUsedUpTo === Infinity) continue;
        break;
      }
      replaced.forEach(drop);
      evicted.forEach(drop);
      this.counters.evicted += evicted.length;
      added.push(segment);
      this.lru.set(segment, true);
      this.counters.bytes += segment.bytes;
      segment.used = ++this.clock;
    }
    const touched = new Set([assetId, ...[...dropped].map((s) => s.assetId)]);
    for (const id of touched) {
      const e = this.assets.get(id)!;
      e.segments = merged(
        e.segments.filter((s) => !dropped.has(s)),
        id === assetId ? added : [],
      );
      if (e.segments.length === 0) this.assets.delete(id);
    }
    return { all, added: added.length };
  }

  /** The segments of `list` (sorted, disjoint) that overlap `segment`: a run from the last one starting at or before it. */
  private overlapping(list: BookSegment[], segment: BookSegment): BookSegment[] {
    const out: BookSegment[] = [];
    for (let i = Math.max(0, lastStartingAtOrBefore(list, segment.start)); i < list.length && list[i].start < segment.end; i++) {
      if (list[i].end > segment.start) out.push(list[i]);
    }
    return out;
  }

  private remove(segment: BookSegment): void {
    if (!this.lru.delete(segment)) return;
    this.counters.bytes -= segment.bytes;
    const entry = this.assets.get(segment.assetId)!;
    entry.segments.splice(lastStartingAtOrBefore(entry.segments, segment.start), 1);
    if (entry.segments.length === 0) this.assets.delete(segment.assetId);
  }
}

/** Index of the last segment starting at or before `at`, -1 when none does. */
function lastStartingAtOrBefore(list: BookSegment[], at: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid].start <= at) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** Two lists of disjoint segments sorted by start, as one. */
function merged(a: BookSegment[], b: BookSegment[]): BookSegment[] {
  if (b.length === 0) return a;
  const out: BookSegment[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) out.push(j === b.length || (i < a.length && a[i].start < b[j].start) ? a[i++] : b[j++]);
  return out;
}

/** How many of the notices' spans [min, max] touch [lo, hi]: those starting by hi, less those ending before lo (which all start by hi). */
export function noticeCounter(spans: [number, number][]): (lo: number, hi: number) => number {
  const mins = spans.map(([min]) => min).sort((a, b) => a - b);
  const maxes = spans.map(([, max]) => max).sort((a, b) => a - b);
  return (lo, hi) => countAtMost(mins, hi) - countAtMost(maxes, lo - 1);
}

/** How many values of the sorted `values` are ≤ `x`. */
function countAtMost(values: number[], x: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A read of segmentsSql, cut into segments at each snapshot as its rows are decoded, chunk by chunk.
 * The read starts at the latest snapshot at or before `at`; when there is none it starts at the
 * asset's first event, and the first segment then begins at 0 (instants before any event have no
 * book).
 */
class SegmentSplitter {
  /** Segments complete, not taken yet. */
  segments: BookSegment[] = [];
  rows = 0;
  /** The first row's market. */
  firstMarket = '';
  private readonly decoder: BookEventDecoder;
  private readonly builder = new SegmentBuilder();
  private start = 0;
  private lastMs = 0;

  /** `usualMarket`: the value bound to {usual_market} in the read (BookEventDecoder). */
  constructor(
    private readonly assetId: string,
    private readonly at: number,
    usualMarket: string,
  ) {
    this.decoder = new BookEventDecoder(usualMarket);
  }

  push(chunk: Buffer): void {
    const { builder, decoder } = this;
    decoder.feed(chunk);
    for (let e = decoder.read(); e !== undefined; e = decoder.read()) {
      const { market } = e;
      if (this.rows++ === 0) {
        this.start = e.kind === KIND_CHANGE || e.ms > this.at ? 0 : e.ms;
        this.firstMarket = market;
      }
      if (e.kind === KIND_CHANGE) builder.addChange(e.ms, market, e.price, e.size, e.bookSide === SIDE_BUY);
      else {
        if (!builder.empty || this.start !== e.ms) {
          this.close(e.ms);
          this.start = e.ms;
        }
        builder.setSnapshot(e.ms, market, e.bids, e.asks);
      }
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
    if (!cut) this.close(stop);
    else if (this.rows > 0) {
      this.builder.dropFrom(this.lastMs);
      this.close(this.lastMs);
    }
  }

  /** The segments complete so far, in order; they are then forgotten here. */
  take(): BookSegment[] {
    const out = this.segments;
    this.segments = [];
    return out;
  }

  private close(end: number): void {
    if (this.start < end) this.segments.push(this.builder.build(this.assetId, this.start, end));
    else this.builder.clear();
  }
}

/**
 * The segment of a point read (POINT_SQL): the latest snapshot up to `at` and the changes after it
 * up to `at`, ending at the first event after `at`, so it answers `at` as the cached segment
 * holding it would. Undefined when the events read hold no snapshot and more came before them.
 */
async function pointRead(
  engine: Engine,
  params: { asset_id: string; at: number; usual_market: string },
  signal?: AbortSignal,
): Promise<BookSegment | undefined> {
  const decoder = new BookEventDecoder(params.usual_market);
  const newestFirst: { ms: number; market: string; price: number; size: number; bid: boolean }[] = [];
  const builder = new SegmentBuilder();
  let end = Infinity;
  decoder.feed(await engine.bytes(POINT_SQL, 'RowBinary', { params, signal }));
  for (let e = decoder.read(); e !== undefined; e = decoder.read()) {
    const { market } = e;
    if (e.ms > params.at) end = e.ms;
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
  return builder.build(params.asset_id, builder.snapshot?.ms ?? 0, end);
}

/** At most `limit` tasks at once; the others wait, first come first served. */
class Turns {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
