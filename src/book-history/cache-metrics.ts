import { metrics } from '../metrics.js';
import type { BookCache } from './cache.js';
import type { BookReader } from './port.js';

/**
 * The book segment cache at /metrics: what it holds, and how lookups were answered (hits, gap reads
 * and the misses they answered, point reads, background reads). Registered by the app that owns the
 * cache (one per process in production; in tests the last one made).
 */
export function exportBookCacheMetrics(cache: BookCache): void {
  const stats = () => cache.stats();
  metrics.gauge('tickhouse_book_cache_bytes', 'Memory held by book segments and snapshot directories (BOOK_CACHE_MB bounds it)', () => stats().bytes);
  metrics.gauge('tickhouse_book_cache_segments', 'Book segments held', () => stats().segments);
  metrics.counterOf('tickhouse_book_cache_hits_total', 'Book lookups answered from a held segment', () => stats().hits);
  metrics.counterOf('tickhouse_book_cache_misses_total', 'Book lookups that read the engine', () => stats().misses);
  metrics.counterOf('tickhouse_book_cache_gap_reads_total', 'Reads of whole segments, each answering the misses gathered meanwhile', () => stats().gapReads);
  metrics.counterOf('tickhouse_book_cache_point_reads_total', 'Misses answered by a point read (no directory, a long gap)', () => stats().pointReads);
  metrics.counterOf('tickhouse_book_cache_filled_segments_total', 'Segments stored by background reads (read-aheads and fills)', () => stats().filled);
}

/** The reader, its cache's counters exported. */
export function withCacheMetrics<R extends BookReader & { cache: BookCache }>(reader: R): R {
  exportBookCacheMetrics(reader.cache);
  return reader;
}
