import { monitorEventLoopDelay } from 'node:perf_hooks';
import { turnsWaiting } from './event-loop.js';
import { metrics } from './metrics.js';

/** Quantiles of the event loop's delay /metrics reports (1: the longest). */
const DELAY_QUANTILES = [0.5, 0.9, 0.99, 1];

/**
 * What /metrics says about the process itself (issue 35), started once per process (main.ts):
 *   - how late the event loop ran its timers (node:perf_hooks monitorEventLoopDelay, sampled every
 *     10 ms): what a request arriving at a random moment waits before any of its code runs, /healthz
 *     included. The quantiles are of the delays since the previous scrape (then it starts over), so
 *     each scrape says what the loop did since the last one; `_max_seconds` is the longest since start;
 *   - the work queued for a turn of the loop (event-loop.ts);
 *   - where its memory is: V8's heap, and the buffers outside it.
 */
export function monitorProcess(): void {
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
  metrics.gauge(
    'tickhouse_event_loop_turns_waiting',
    'Long folds and streams waiting for their next slice (one is let go per turn of the event loop)',
    turnsWaiting,
  );
  metrics.collect('tickhouse_process_memory_bytes', () => {
    const m = process.memoryUsage();
    return [
      "# HELP tickhouse_process_memory_bytes Memory of the process: rss, V8 heap used and total, external (buffers, the engine's results) and array buffers",
      '# TYPE tickhouse_process_memory_bytes gauge',
      ...(['rss', 'heapUsed', 'heapTotal', 'external', 'arrayBuffers'] as const).map((k) => `tickhouse_process_memory_bytes{kind="${k}"} ${m[k]}`),
    ].join('\n');
  });
}
