import { monitorEventLoopDelay } from 'node:perf_hooks';
import { metrics } from './metrics.js';

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

/** Quantiles of the event loop's delay /metrics reports (1: the longest). */
const DELAY_QUANTILES = [0.5, 0.9, 0.99, 1];

/**
 * How late the event loop ran its timers (node:perf_hooks monitorEventLoopDelay, sampled every
 * 10 ms): what a request arriving at a random moment waits before any of its code runs, /healthz
 * included. /metrics reports the quantiles of the delays since the previous scrape (then starts
 * over), so each scrape says what the loop did since the last one; `_max_seconds` is the longest
 * since the process started. Started once per process (main.ts).
 */
export function monitorEventLoop(): void {
  const window = monitorEventLoopDelay({ resolution: 10 });
  window.enable();
  let longest = 0;
  metrics.collect('tickhouse_event_loop_delay_seconds', () => {
    const lines = [
      '# HELP tickhouse_event_loop_delay_seconds Event loop delay since the previous scrape (quantile 1: the longest)',
      '# TYPE tickhouse_event_loop_delay_seconds gauge',
    ];
    // An empty window (scraped twice within 10 ms) reports zeros, not Node's sentinel values.
    const empty = window.count === 0;
    for (const q of DELAY_QUANTILES) lines.push(`tickhouse_event_loop_delay_seconds{quantile="${q}"} ${empty ? 0 : window.percentile(q * 100) / 1e9}`);
    if (!empty) longest = Math.max(longest, window.max / 1e9);
    window.reset();
    lines.push(
      '# HELP tickhouse_event_loop_delay_max_seconds The longest event loop delay since the process started',
      '# TYPE tickhouse_event_loop_delay_max_seconds gauge',
      `tickhouse_event_loop_delay_max_seconds ${longest}`,
    );
    return lines.join('\n');
  });
}
