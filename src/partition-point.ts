/**
 * The first index in [lo, hi) at which `before(i)` is false, or `hi` when there is none; `before` must be
 * true up to some index and false from there on. Over a sorted array with `before = (i) => a[i] <= x`, it
 * is the index of the first element after `x` (how many are ≤ x, from `lo`).
 *
 * The code base's one binary search, for lookups (a segment, a snapshot, notices). The order book keeps
 * its own loop per side (src/book/order-book.ts): it runs for every change of every fold, where a call
 * through a predicate would cost more than the search.
 */
export function partitionPoint(lo: number, hi: number, before: (i: number) => boolean): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
