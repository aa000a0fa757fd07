import { metrics } from '../../metrics.js';

/**
 * The recorder's series in the process-wide registry: served at /metrics by the API when the
 * recorder runs inside it, or by `npm run record --metrics-port`.
 */
export const recorderMetrics = {
  frames: metrics.counter('tickhouse_recorder_frames_total', 'Market-channel frames received (PONG excluded)'),
  malformed: metrics.counter('tickhouse_recorder_malformed_frames_total', 'Frames skipped because they were not valid JSON or an event lacked a field'),
  rows: metrics.counter('tickhouse_recorder_rows_total', 'Rows stored by the recorder, by table'),
  reconnects: metrics.counter('tickhouse_recorder_reconnects_total', 'WebSocket reconnects after a drop, an error or a silent socket'),
  insertFailures: metrics.counter('tickhouse_recorder_insert_failures_total', 'Failed insert attempts (the rows stay buffered and are retried)'),
};

export interface RecorderGauges {
  connected(): number;
  assets(): number;
  live(): number;
  silent(): number;
  buffered(): number;
  paused(): number;
  lastInsertSeconds(): number;
}

/** Points the gauges at the running recorder (the latest started one, when a test starts several). */
export function registerRecorderGauges(read: RecorderGauges): void {
  metrics.gauge('tickhouse_recorder_connected_sockets', 'Market-channel sockets currently open', read.connected);
  metrics.gauge('tickhouse_recorder_subscribed_assets', 'Assets subscribed over all sockets', read.assets);
  metrics.gauge('tickhouse_recorder_live_tokens', "Tokens to record: Gamma's live ones (--all) or the given ones (--assets)", read.live);
  metrics.gauge('tickhouse_recorder_silent_tokens', 'Tokens live on a socket for longer than RECORDER_STALE_AFTER_MS without a single event', read.silent);
  metrics.gauge('tickhouse_recorder_buffered_rows', 'Rows accepted but not yet stored', read.buffered);
  metrics.gauge('tickhouse_recorder_paused', '1 while reading is paused because the buffer is full', read.paused);
  metrics.gauge('tickhouse_recorder_last_insert_seconds', 'Duration of the last successful insert', read.lastInsertSeconds);
}
