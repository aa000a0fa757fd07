/**
 * Long folds (a book dataset of millions of rows) advance by awaiting promises that are already
 * resolved: microtasks, which run before any I/O. Without a real break the whole export would run
 * as one turn of the event loop, /healthz and every other request waiting for it (issue 24's fuzz
 * harness: a Parquet book export on a 2 ms grid held the loop for over a minute). A loop asks `due()`
 * at each step and, when it says so, awaits `nextTurn()`, which resolves after pending I/O.
 */
export class LoopBreaks {
  private last = performance.now();

  /** `everyMs`: the longest stretch of work between two breaks. */
  constructor(private readonly everyMs = 10) {}

  due(): boolean {
    const now = performance.now();
    if (now - this.last < this.everyMs) return false;
    this.last = now;
    return true;
  }
}

export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
