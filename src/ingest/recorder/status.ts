import { log } from '../../log.js';
import type { SinkStats } from './buffered-sink.js';
import type { ArchiveStats } from './frame-archive.js';
import { recorderMetrics } from './metrics.js';

export interface RecorderStatus {
  /** Frames received (PONG excluded). */
  frames: number;
  pongs: number;
  malformed: number;
  /** Events of an unknown type, skipped. */
  unknown: number;
  /** Rows produced by the normalizer (ticks, snapshots, markets). */
  rows: number;
  sockets: number;
  connected: number;
  /** Tokens subscribed over all sockets. */
  assets: number;
  /** Tokens to record: Gamma's live ones with --all (capped subscriptions included), the given ones with --assets. */
  live: number;
  /** Tokens live on a socket without a single event for longer than the stale bound (silent-tokens.ts). */
  silent: number;
  reconnects: number;
  pingsSent: number;
  sink: SinkStats;
  archive: ArchiveStats | null;
}

/** A status sample with rates over the time since the previous one. */
export interface StatusReport extends RecorderStatus {
  framesPerSec: number;
  rowsPerSec: number;
}

/**
 * Samples the status every `intervalMs` and hands each sample on with its rates. rows/s counts rows
 * stored in ClickHouse, so it falls to 0 while inserts fail even though frames keep arriving.
 */
export class StatusReporter {
  private timer: NodeJS.Timeout | null = null;
  private sample = { at: 0, frames: 0, rows: 0 };

  constructor(
    private readonly read: () => RecorderStatus,
    private readonly report: (r: StatusReport) => void = logStatus,
  ) {}

  /** The first rates run from here, not from construction: discovery may have taken a while. */
  start(intervalMs: number): void {
    this.sample = { at: performance.now(), frames: 0, rows: 0 };
    if (intervalMs > 0) this.timer = setInterval(() => this.sampleNow(), intervalMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private sampleNow(): void {
    const s = this.read();
    const now = performance.now();
    const seconds = (now - this.sample.at) / 1000;
    const stored = storedRows(s.sink);
    this.report({ ...s, framesPerSec: (s.frames - this.sample.frames) / seconds, rowsPerSec: (stored - this.sample.rows) / seconds });
    this.sample = { at: now, frames: s.frames, rows: stored };
  }
}

/**
 * Logs malformed frames without flooding the log: the first ten in full (cut at 300 characters),
 * then every 1000th; every one is counted in the metrics. One per recorder, so a second recorder in
 * the same process (tests) logs its own first ten.
 */
export class MalformedFrameLog {
  private logged = 0;

  record(text: string, total: number): void {
    recorderMetrics.malformed.inc();
    if (this.logged < 10 || total % 1000 === 0) {
      this.logged++;
      log.warn('malformed frame skipped', { malformed_total: total, frame: text.slice(0, 300) });
    }
  }
}

/** Rows in the tables a user reads (capture records and drift checks left out). */
export function storedRows(s: SinkStats): number {
  return s.stored.ticks + s.stored.book_snapshots + s.stored.markets + s.stored.market_events;
}

/** The default report: a `recorder status` log line. */
function logStatus(r: StatusReport): void {
  log.info('recorder status', statusFields(r));
}

/** The fields of the `recorder status` and `recorder stopped` log lines. */
export function statusFields(r: StatusReport): Record<string, unknown> {
  return {
    frames_per_s: Math.round(r.framesPerSec),
    rows_per_s: Math.round(r.rowsPerSec),
    sockets: `${r.connected}/${r.sockets}`,
    assets: r.assets,
    tokens_live: r.live,
    tokens_silent: r.silent,
    buffered_rows: r.sink.pending,
    paused: r.sink.full,
    last_insert_ms: Math.round(r.sink.lastInsertMs),
    frames: r.frames,
    rows_stored: storedRows(r.sink),
    malformed: r.malformed,
    reconnects: r.reconnects,
  };
}

/** One human line for `npm run record`. */
export function formatStatusLine(r: StatusReport): string {
  return (
    `record: ${Math.round(r.framesPerSec)} frames/s, ${Math.round(r.rowsPerSec)} rows/s, ` +
    `sockets ${r.connected}/${r.sockets}, tokens ${r.live} live, ${r.assets} subscribed, ${r.silent} silent, ` +
    `buffer ${r.sink.pending} rows${r.sink.full ? ' (PAUSED: ClickHouse behind)' : ''}, ` +
    `last insert ${Math.round(r.sink.lastInsertMs)} ms` +
    (r.sink.failingSince ? `, ClickHouse failing for ${Math.round((Date.now() - r.sink.failingSince) / 1000)} s` : '') +
    ` | total ${r.frames} frames, ${storedRows(r.sink)} rows stored, ${r.malformed} malformed, ${r.reconnects} reconnects`
  );
}
