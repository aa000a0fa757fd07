import { randomUUID } from 'node:crypto';
import type { Engine } from '../../clickhouse/engine.js';
import { log, errorText } from '../../log.js';
import { FrameArchive, type ArchiveStats } from './frame-archive.js';
import { BufferedSink, type SinkStats } from './buffered-sink.js';
import { captureLine, type CaptureRecord } from '../capture-record.js';
import { discoverActiveMarkets, lookupMarkets } from './gamma-client.js';
import { Normalizer, type RowSink, type SeqSource } from '../normalizer.js';
import type { RecorderOptions } from './options.js';
import { recorderMetrics, registerRecorderGauges } from './metrics.js';
import type { MarketRow } from '../../clickhouse/rows.js';
import { MarketFeed, type SocketEvent } from './market-feed.js';

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
  assets: number;
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

export interface Recorder {
  /** Stops reading, stores every buffered row, writes the archive, closes the sockets. */
  stop(): Promise<void>;
  status(): RecorderStatus;
}

export interface RecorderHooks {
  /** Receives each periodic status (default: a `recorder status` log line). */
  onStatus?: (report: StatusReport) => void;
}

/**
 * The seq of live rows: microseconds of the wall clock, bumped by one when rows come faster, so it
 * increases across restarts too and stays < 2^53 until the year 2255.
 */
export function clockSeq(): SeqSource {
  let last = 0;
  return () => (last = Math.max(last + 1, Date.now() * 1000));
}

/**
 * Starts recording into `engine` (shared with the API when it runs in the same process): discovers
 * markets, subscribes, normalizes every frame with the replay normalizer, buffers rows, and keeps
 * following new markets. Resolves once discovery has answered and the sockets are opening.
 */
export async function startRecorder(engine: Engine, options: RecorderOptions, hooks: RecorderHooks = {}): Promise<Recorder> {
  let stopped = false;
  const run = `rec-${randomUUID()}`;
  const sink = new BufferedSink(engine, {
    runId: run,
    batchRows: options.batchRows,
    batchAgeMs: options.batchAgeMs,
    maxBufferedRows: options.maxBufferedRows,
    retryMinMs: options.retryMinMs,
    retryMaxMs: options.retryMaxMs,
    onPressure: (full) => (full ? feed.pause() : feed.resume()),
  });
  const archive = options.archiveDir ? new FrameArchive(options.archiveDir) : null;

  // Market rows pass through here, from Gamma and from `new_market` events alike: with --active,
  // an asset not subscribed yet is queued for subscription.
  const toSubscribe = new Set<string>();
  // Assets live on a socket whose first exchange book since they went live has not come yet; the
  // frame being normalized came from `frameSocket`.
  const awaitingBook = new Map<number, Set<string>>();
  let frameSocket = 0;
  let resynced: string[] = [];
  const following: RowSink = {
    tick: (row) => sink.tick(row),
    snapshot(row) {
      sink.snapshot(row);
      if (row.is_checkpoint === 0 && awaitingBook.get(frameSocket)?.delete(row.asset_id)) resynced.push(row.asset_id);
    },
    bookCheck: (row) => sink.bookCheck(row),
    capture: (row) => sink.capture(row),
    market(row) {
      sink.market(row);
      if (options.assets === null && !feed.isSubscribed(row.asset_id)) toSubscribe.add(row.asset_id);
    },
  };
  const normalizer = new Normalizer(following, { seq: clockSeq() });
  let frames = 0;
  let pongs = 0;

  /**
   * A capture record goes into the archive as a line among the frames and through the normalizer
   * like one, so the rows stored live are the rows a replay of the archive stores.
   */
  function capture(kind: CaptureRecord['kind'], socket: number, assets: string[], t = Date.now()): void {
    const line = captureLine({ kind, t, run, socket, assets });
    archive?.append(line, t);
    normalizer.push(line);
  }

  function onSocketEvent(e: SocketEvent): void {
    if (stopped) return;
    capture(e.kind, e.socket, e.assets, e.at);
    if (e.kind === 'close') awaitingBook.delete(e.socket);
    else if (e.kind === 'open') {
      const awaiting = awaitingBook.get(e.socket) ?? new Set<string>();
      e.assets.forEach((a) => awaiting.add(a));
      awaitingBook.set(e.socket, awaiting);
    }
  }
  capture('start', 0, []);

  const feed = new MarketFeed({
    url: options.wsUrl,
    assetsPerSocket: options.assetsPerSocket,
    pingIntervalMs: options.pingIntervalMs,
    staleAfterMs: options.staleAfterMs,
    reconnectMinMs: options.reconnectMinMs,
    reconnectMaxMs: options.reconnectMaxMs,
    onSocketEvent,
    onMessage(text, socket) {
      if (stopped) return;
      if (text === 'PONG') {
        pongs++;
        return;
      }
      frames++;
      recorderMetrics.frames.inc();
      archive?.append(text);
      const malformed = normalizer.stats.malformed;
      frameSocket = socket;
      normalizer.push(text);
      if (normalizer.stats.malformed !== malformed) onMalformed(text, normalizer.stats.malformed);
      if (resynced.length > 0) {
        const assets = resynced;
        resynced = [];
        capture('resync', socket, assets);
      }
      subscribePending();
    },
  });

  function subscribePending(): void {
    if (toSubscribe.size === 0) return;
    let assets = [...toSubscribe];
    toSubscribe.clear();
    if (options.maxAssets > 0) assets = assets.slice(0, Math.max(0, options.maxAssets - feed.stats().assets));
    const added = feed.subscribe(assets);
    if (added && frames > 0) log.info('recorder subscribed new assets', { added, assets: feed.stats().assets });
  }

  // Gamma rows are remembered by content: a refresh re-emits a market only when Gamma changed it.
  const known = new Map<string, string>();
  function addMarkets(rows: MarketRow[]): void {
    const changed = rows.filter((r) => {
      const key = JSON.stringify(r);
      if (known.get(r.asset_id) === key) return false;
      known.set(r.asset_id, key);
      return true;
    });
    normalizer.addMarkets(changed);
  }

  async function discover(): Promise<void> {
    if (options.assets === null) {
      addMarkets(await discoverActiveMarkets(options.gammaUrl, options.maxAssets));
    } else {
      addMarkets(await lookupMarkets(options.gammaUrl, options.assets));
    }
    subscribePending();
  }

  // The first discovery is awaited once. When Gamma fails the recorder starts anyway and keeps
  // asking with backoff: a process embedding it (the API) must not hang on Gamma.
  let discoveryRetry: NodeJS.Timeout | null = null;
  async function firstDiscovery(attempt: number): Promise<void> {
    try {
      await discover();
    } catch (err) {
      const wait = Math.min(60_000, 1000 * 2 ** attempt);
      const msg = options.assets === null
        ? 'Gamma discovery failed: nothing to subscribe to yet; retrying'
        : 'Gamma metadata unavailable: ticks are labelled UNKNOWN until it answers; retrying';
      log.warn(msg, { error: errorText(err), retry_in_ms: wait });
      if (!stopped) discoveryRetry = setTimeout(() => void firstDiscovery(attempt + 1), wait);
    }
  }
  await firstDiscovery(0);
  if (options.assets !== null) feed.subscribe(options.assets);
  log.info('recorder started', { assets: feed.stats().assets, sockets: feed.stats().sockets, mode: options.assets === null ? 'active' : 'assets', archive: options.archiveDir });

  const refresh = options.discoveryIntervalMs > 0
    ? setInterval(() => {
        discover().catch((err) => log.warn('Gamma refresh failed; keeping the current subscriptions', { error: errorText(err) }));
      }, options.discoveryIntervalMs)
    : null;

  const status = (): RecorderStatus => {
    const f = feed.stats();
    const n = normalizer.stats;
    return {
      frames,
      pongs,
      malformed: n.malformed,
      unknown: n.unknown,
      rows: n.ticks + n.snapshots + n.checkpoints + n.markets,
      sockets: f.sockets,
      connected: f.connected,
      assets: f.assets,
      reconnects: f.reconnects,
      pingsSent: f.pingsSent,
      sink: { ...sink.stats, stored: { ...sink.stats.stored } },
      archive: archive ? { ...archive.stats } : null,
    };
  };
  registerRecorderGauges({
    connected: () => feed.stats().connected,
    assets: () => feed.stats().assets,
    buffered: () => sink.stats.pending,
    paused: () => (sink.stats.full ? 1 : 0),
    lastInsertSeconds: () => sink.stats.lastInsertMs / 1000,
  });

  let sample = { at: performance.now(), frames: 0, rows: 0 };
  const report = hooks.onStatus ?? ((r: StatusReport) => log.info('recorder status', statusFields(r)));
  const statusTimer = options.statusIntervalMs > 0
    ? setInterval(() => {
        const s = status();
        const now = performance.now();
        const seconds = (now - sample.at) / 1000;
        const stored = storedRows(s.sink);
        report({ ...s, framesPerSec: (s.frames - sample.frames) / seconds, rowsPerSec: (stored - sample.rows) / seconds });
        sample = { at: now, frames: s.frames, rows: stored };
      }, options.statusIntervalMs)
    : null;

  let stopping: Promise<void> | null = null;
  return {
    status,
    stop() {
      stopping ??= (async () => {
        capture('stop', 0, []);
        stopped = true;
        if (refresh) clearInterval(refresh);
        if (discoveryRetry) clearTimeout(discoveryRetry);
        if (statusTimer) clearInterval(statusTimer);
        await feed.close();
        if (sink.stats.pending > 0) log.info('recorder flushing buffered rows', { pending_rows: sink.stats.pending });
        await Promise.all([sink.flush(), archive?.flush()]);
        log.info('recorder stopped', statusFields({ ...status(), framesPerSec: 0, rowsPerSec: 0 }));
      })();
      return stopping;
    },
  };
}

let malformedLogged = 0;
/** The first malformed frames are logged in full (cut at 300 characters), then every 1000th. */
function onMalformed(text: string, total: number): void {
  recorderMetrics.malformed.inc();
  if (malformedLogged < 10 || total % 1000 === 0) {
    malformedLogged++;
    log.warn('malformed frame skipped', { malformed_total: total, frame: text.slice(0, 300) });
  }
}

export function storedRows(s: SinkStats): number {
  return s.stored.ticks + s.stored.book_snapshots + s.stored.markets;
}

function statusFields(r: StatusReport): Record<string, unknown> {
  return {
    frames_per_s: Math.round(r.framesPerSec),
    rows_per_s: Math.round(r.rowsPerSec),
    sockets: `${r.connected}/${r.sockets}`,
    assets: r.assets,
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
    `sockets ${r.connected}/${r.sockets}, assets ${r.assets}, buffer ${r.sink.pending} rows${r.sink.full ? ' (PAUSED: ClickHouse behind)' : ''}, ` +
    `last insert ${Math.round(r.sink.lastInsertMs)} ms` +
    (r.sink.failingSince ? `, ClickHouse failing for ${Math.round((Date.now() - r.sink.failingSince) / 1000)} s` : '') +
    ` | total ${r.frames} frames, ${storedRows(r.sink)} rows stored, ${r.malformed} malformed, ${r.reconnects} reconnects`
  );
}
