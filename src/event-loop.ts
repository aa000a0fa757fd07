/**
 * Long folds (a book dataset of millions of rows) advance by awaiting promises that are already
 * resolved: microtasks, which run before any I/O. Without a real break the whole export would run
 * as one turn of the event loop, /healthz and every other request waiting for it (issue 24's fuzz
 * harness: a Parquet book export on a 2 ms grid held the loop for over a minute). A loop asks `due()`
 * at each step and, when it says so, awaits `turn()`: its next slice starts once the event loop has
 * polled for I/O, and lasts `everyMs` from then.
 */
export class LoopBreaks {
  private last = performance.now();

  /** `everyMs`: the longest stretch of work between two breaks. */
  constructor(private readonly everyMs = 10) {}

  due(): boolean {
    return performance.now() - this.last >= this.everyMs;
  }

  /** Waits for a turn (nextTurn); the next slice is measured from when it comes, not from when it was asked for. */
  async turn(): Promise<void> {
    await nextTurn();
    this.last = performance.now();
  }
}

/**
 * Work waiting for its next slice, process-wide, in the order it asked. One waiter is let go per turn
 * of the event loop (one setImmediate each, queued from the previous one's, so it runs after the next
 * poll for I/O): K long folds then take turns with the sockets between every two slices. Each calling
 * setImmediate itself ran all K slices back to back in one check phase (K × 10 ms before the loop
 * looked at a socket again: /healthz waited behind every export and replay under way, issue 35).
 */
const waiting: (() => void)[] = [];
let scheduled = false;

function letOneGo(): void {
  scheduled = false;
  waiting.shift()?.();
  if (waiting.length) schedule();
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(letOneGo);
}

/** Resolves once this waiter's turn comes: after pending I/O, and after the waiters before it. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    schedule();
  });
}

/** Waiters for a turn right now (/metrics: work queued behind the event loop). */
export function turnsWaiting(): number {
  return waiting.length;
}
