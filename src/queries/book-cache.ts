import type { Engine } from '../clickhouse/engine.js';
import { BookSegment, type SegmentEvent } from './book-segment.js';
import { BINARY_EVENT_COLUMNS, BookEventDecoder, KIND_CHANGE, SIDE_BUY } from './book-event-decoder.js';
import { MAX_TIME_MS, POINT_READ } from './orderbook.js';

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
 * Events one miss reads forward from the snapshot before T: ~40 segments at the default checkpoint
 * interval. A read's cost is mostly fixed (finding the snapshot key, opening the part): measured on
 * the bench's largest asset, 8,192 events cost ~17 ms of CPU and 1,024 ~13 ms, so a miss reads far
 * ahead and random instants fill the cache at a fraction of a point read per segment.
 */
const SEGMENTS_READ = 8192;

/**
 * The latest snapshot at or before {at} (none: the asset's first event) and the events after it up
 * to {last}, in (t, seq) order, as RowBinary (BookEventDecoder): one primary-key range read that stops
 * after SEGMENTS_READ rows. No sort key beyond the table's: `kind` as a third one made the engine
 * sort the whole rest of the asset (178 ms instead of 14 ms at 4,096 rows).
 *
 * A checkpoint shares the (t, seq) of the change it follows, and already holds it. At the first
 * snapshot that change is left out by the WHERE (it could come before its snapshot in the result).
 * At later ones it lands either just before its snapshot, at the previous segment's end (where no
 * instant of that segment applies it), or just after it, where applying it sets a level to the size
 * the snapshot already gives it: the same book either way.
 */
const SEGMENTS_SQL = `
WITH (SELECT (t, seq) FROM book_events
      WHERE asset_id = {asset_id:String} AND kind != 'price_change' AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
      ORDER BY t DESC, seq DESC LIMIT 1) AS k
SELECT ${BINARY_EVENT_COLUMNS}
FROM book_events
WHERE asset_id = {asset_id:String} AND t >= assumeNotNull(k).1 AND t <= fromUnixTimestamp64Milli({last:Int64}, 'UTC')
  AND (t > assumeNotNull(k).1 OR seq > assumeNotNull(k).2 OR (seq = assumeNotNull(k).2 AND kind != 'price_change'))
ORDER BY t, seq
LIMIT ${SEGMENTS_READ}
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
}

export class BookCache {
  private readonly byAsset = new Map<string, BookSegment[]>();
  /** Insertion order is recency: a hit moves its segment to the end. */
  private readonly lru = new Map<BookSegment, true>();
  private readonly counters = { bytes: 0, hits: 0, misses: 0, invalidated: 0, evicted: 0 };

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
    this.lru.delete(segment);
    this.lru.set(segment, true);
    return segment;
  }

  /** Reads the segments from the snapshot before `at` on, keeps them when nothing was written meanwhile, and returns the one answering `at`. */
  async load(assetId: string, at: number, signal?: AbortSignal): Promise<BookSegment | undefined> {
    this.counters.misses++;
    const epoch = this.engine.writeEpoch();
    const before = epoch === null ? Number((await this.engine.rows<{ total: number }>(TOTAL_SQL, { signal }))[0].total) : 0;
    // Up to the next cached segment: history already held is not read again.
    const stop = this.nextStart(assetId, at);
    const events = await readEvents(this.engine, { asset_id: assetId, at, last: Math.min(stop, MAX_TIME_MS + 1) - 1 }, signal);
    const segments = splitSegments(assetId, at, events, events.length === SEGMENTS_READ ? null : stop);
    if (segments.length === 0) return undefined;
    const lo = segments[0].start;
    const hi = spanEnd(segments[segments.length - 1]);
    const [{ total, spans }] = await this.engine.rows<{ total: number; spans: [number, number][] }>(spansSql(epoch === null), { params: { asset_id: assetId, lo, hi }, signal });
    const unchanged = epoch === null ? Number(total) === before : this.engine.writeEpoch() === epoch;
    for (const segment of segments) {
      segment.notices = spans.filter(([min, max]) => min <= spanEnd(segment) && max >= segment.start).length;
      segment.validAtEpoch = epoch;
      if (unchanged) this.store(segment);
    }
    return segments.find((s) => s.covers(at));
  }

  /** Start of the first cached segment after `at` (Infinity when none). */
  private nextStart(assetId: string, at: number): number {
    const list = this.byAsset.get(assetId);
    return list?.[lastStartingAtOrBefore(list, at) + 1]?.start ?? Infinity;
  }

  private find(assetId: string, at: number): BookSegment | undefined {
    const list = this.byAsset.get(assetId);
    if (!list) return undefined;
    const i = lastStartingAtOrBefore(list, at);
    return i >= 0 && list[i].covers(at) ? list[i] : undefined;
  }

  private store(segment: BookSegment): void {
    if (segment.bytes > this.capacityBytes) return;
    let list = this.byAsset.get(segment.assetId);
    if (!list) this.byAsset.set(segment.assetId, (list = []));
    // Segments it overlaps were read before it (an unfinished one, or one a late write replaced).
    for (const old of list.filter((s) => s.start < segment.end && segment.start < s.end)) this.remove(old);
    list.splice(lastStartingAtOrBefore(list, segment.start) + 1, 0, segment);
    this.lru.set(segment, true);
    this.counters.bytes += segment.bytes;
    for (const oldest of this.lru.keys()) {
      if (this.counters.bytes <= this.capacityBytes) break;
      this.counters.evicted++;
      this.remove(oldest);
    }
  }

  private remove(segment: BookSegment): void {
    if (!this.lru.delete(segment)) return;
    this.counters.bytes -= segment.bytes;
    const list = this.byAsset.get(segment.assetId)!;
    list.splice(list.indexOf(segment), 1);
    if (list.length === 0) this.byAsset.delete(segment.assetId);
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

/** One event of a forward read: a change, or a snapshot with its levels. */
type LoadedEvent = SegmentEvent & { kind: number };

/** The read of SEGMENTS_SQL, decoded: one bounded result (Engine.bytes), not a stream. */
async function readEvents(engine: Engine, params: { asset_id: string; at: number; last: number }, signal?: AbortSignal): Promise<LoadedEvent[]> {
  // No usual market: a miss does not know it, and every row carries its own.
  const decoder = new BookEventDecoder('');
  const events: LoadedEvent[] = [];
  decoder.feed(await engine.bytes(SEGMENTS_SQL, 'RowBinary', { params: { ...params, usual_market: '' }, signal }));
  for (let e = decoder.read(); e !== undefined; e = decoder.read()) {
    const snapshot = e.kind !== KIND_CHANGE ? { bids: e.bids, asks: e.asks } : null;
    events.push({ kind: e.kind, ms: e.ms, market: e.market, price: e.price, size: e.size, bid: e.bookSide === SIDE_BUY, snapshot });
  }
  if (decoder.unfinished) throw new Error('book_events read ended inside a row');
  return events;
}

/**
 * Cuts a forward read into segments at each snapshot. The read starts at the latest snapshot at or
 * before `at`; when there is none it starts at the asset's first event, and the first segment then
 * begins at 0 (instants before any event have no book). `stop`: where the read was bounded (the next
 * cached segment, or Infinity when it reached the newest events); null when its LIMIT cut it, and it
 * then ends before the millisecond of its last row (more events of that ms may follow).
 */
export function splitSegments(assetId: string, at: number, events: LoadedEvent[], stop: number | null): BookSegment[] {
  let usable = events;
  let lastEnd = stop ?? Infinity;
  if (stop === null) {
    lastEnd = events[events.length - 1].ms;
    usable = events.filter((e) => e.ms < lastEnd);
  }
  const fromFirstEvent = events.length === 0 || events[0].kind === KIND_CHANGE || events[0].ms > at;
  const segments: BookSegment[] = [];
  let start = fromFirstEvent ? 0 : usable[0]?.ms;
  let segmentEvents: SegmentEvent[] = [];
  const close = (end: number) => {
    if (start !== undefined && start < end) segments.push(new BookSegment(assetId, start, end, segmentEvents));
  };
  for (const e of usable) {
    if (e.snapshot && (segmentEvents.length > 0 || start !== e.ms)) {
      close(e.ms);
      start = e.ms;
      segmentEvents = [];
    }
    segmentEvents.push(e);
  }
  close(lastEnd);
  return segments;
}
