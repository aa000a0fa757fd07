import { partitionPoint } from '../partition-point.js';
import type { BookSegment } from './segment.js';

/**
 * The segments a BookCache holds, per asset sorted by start, and their memory: least recently used
 * out beyond the capacity left by what else the cache holds (`reserved`: its snapshot directories).
 * Memory only: what to read and when a segment is still valid is cache.ts's business.
 */
export class SegmentStore {
  private readonly assets = new Map<string, AssetSegments>();
  /** Insertion order is recency: a use moves its segment to the end. */
  private readonly lru = new Map<BookSegment, true>();
  bytes = 0;
  evicted = 0;
  /** Counts stores and uses: BookSegment.used. */
  clock = 0;

  constructor(
    private readonly capacityBytes: number,
    private readonly reserved: () => number,
  ) {}

  get size(): number {
    return this.lru.size;
  }

  /** The segment answering `at`, if held. */
  find(assetId: string, at: number): BookSegment | undefined {
    const list = this.assets.get(assetId)?.segments;
    if (!list) return undefined;
    const i = lastStartingAtOrBefore(list, at);
    return i >= 0 && list[i].covers(at) ? list[i] : undefined;
  }

  /** The market the asset's events carry, as its first read found it ('' when unknown). */
  market(assetId: string): string {
    return this.assets.get(assetId)?.market ?? '';
  }

  setMarket(assetId: string, market: string): void {
    const entry = this.assets.get(assetId);
    if (entry && entry.market === '') entry.market = market;
  }

  /** A segment answered a lookup: most recently used now. */
  touch(segment: BookSegment): void {
    this.lru.delete(segment);
    this.lru.set(segment, true);
    segment.used = ++this.clock;
  }

  /**
   * Keeps the segments of one read (in order), least recently used segments out beyond the
   * capacity, except segments used after `evictUsedUpTo`: the segment that would need one of them
   * out, and those after it, are not kept (a fill stops rather than evict what it or a request just
   * touched). Whether all of them are kept, and how many were added.
   */
  keep(assetId: string, segments: BookSegment[], evictUsedUpTo: number): { all: boolean; added: number } {
    let entry = this.assets.get(assetId);
    if (!entry) this.assets.set(assetId, (entry = { segments: [], market: '' }));
    // Taken out of the LRU and the byte count at once, out of the sorted lists once at the end:
    // a read keeps hundreds of segments, and a splice each was quadratic in the asset's length.
    const dropped = new Set<BookSegment>();
    const added: BookSegment[] = [];
    const drop = (old: BookSegment) => {
      dropped.add(old);
      this.lru.delete(old);
      this.bytes -= old.bytes;
    };
    const capacity = this.capacityBytes - this.reserved();
    let all = true;
    for (const segment of segments) {
      // Those it overlaps were read before it (an unfinished one, or one a late write replaced).
      const replaced = overlapping(entry.segments, segment).filter((s) => !dropped.has(s));
      // One that holds all of it stays (a fill reads through what misses cached; the end of its
      // last read is cut short): it is checked against the notices before every use anyway.
      const [old] = replaced;
      if (replaced.length === 1 && old.start <= segment.start && segment.end <= old.end) continue;
      let excess = this.bytes + segment.bytes - replaced.reduce((sum, s) => sum + s.bytes, 0) - capacity;
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
      this.evicted += evicted.length;
      added.push(segment);
      this.lru.set(segment, true);
      this.bytes += segment.bytes;
      segment.used = ++this.clock;
    }
    this.forget(dropped, assetId, added);
    return { all, added: added.length };
  }

  /** Least recently used segments out until what the cache holds fits its capacity again. */
  shrink(): void {
    let excess = this.bytes + this.reserved() - this.capacityBytes;
    if (excess <= 0) return;
    const dropped = new Set<BookSegment>();
    for (const oldest of this.lru.keys()) {
      if (excess <= 0) break;
      dropped.add(oldest);
      excess -= oldest.bytes;
    }
    for (const segment of dropped) {
      this.lru.delete(segment);
      this.bytes -= segment.bytes;
    }
    this.evicted += dropped.size;
    this.forget(dropped);
  }

  remove(segment: BookSegment): void {
    if (!this.lru.delete(segment)) return;
    this.bytes -= segment.bytes;
    const entry = this.assets.get(segment.assetId)!;
    entry.segments.splice(lastStartingAtOrBefore(entry.segments, segment.start), 1);
    if (entry.segments.length === 0) this.assets.delete(segment.assetId);
  }

  /** Takes `dropped` out of their assets' lists, and adds `added` (sorted, disjoint) to `assetId`'s. */
  private forget(dropped: Set<BookSegment>, assetId?: string, added: BookSegment[] = []): void {
    const touched = new Set([...(assetId === undefined ? [] : [assetId]), ...[...dropped].map((s) => s.assetId)]);
    for (const id of touched) {
      const e = this.assets.get(id);
      if (!e) continue;
      e.segments = merged(
        e.segments.filter((s) => !dropped.has(s)),
        id === assetId ? added : [],
      );
      if (e.segments.length === 0) this.assets.delete(id);
    }
  }
}

/** What the store holds of one asset; dropped with its last segment. */
interface AssetSegments {
  /** Its segments, by start. */
  segments: BookSegment[];
  /** The market its events carry (its first read's), left out of the rows of later reads. */
  market: string;
}

/** The segments of `list` (sorted, disjoint) that overlap `segment`: a run from the last one starting at or before it. */
function overlapping(list: BookSegment[], segment: BookSegment): BookSegment[] {
  const out: BookSegment[] = [];
  for (let i = Math.max(0, lastStartingAtOrBefore(list, segment.start)); i < list.length && list[i].start < segment.end; i++) {
    if (list[i].end > segment.start) out.push(list[i]);
  }
  return out;
}

/** Index of the last segment starting at or before `at`, -1 when none does. */
function lastStartingAtOrBefore(list: BookSegment[], at: number): number {
  return partitionPoint(0, list.length, (i) => list[i].start <= at) - 1;
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
