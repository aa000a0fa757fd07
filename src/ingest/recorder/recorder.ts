import { randomUUID } from 'node:crypto';
import type { Engine } from '../../clickhouse/engine.js';
import { log } from '../../log.js';
import { type CaptureRecord, captureLine } from '../capture-record.js';
import { Normalizer, type RowSink, type SeqSource } from '../normalizer.js';
import { receiveTimePrefix } from '../receive-time.js';
import { BufferedSink } from './buffered-sink.js';
import { MarketDiscovery } from './discovery.js';
import { FrameArchive } from './frame-archive.js';
import { MarketFeed, type SocketEvent } from './market-feed.js';
import { recorderMetrics, registerRecorderGauges } from './metrics.js';
import type { RecorderOptions } from './options.js';
import { ResyncTracker } from './resync.js';
import { MalformedFrameLog, type RecorderStatus, type StatusReport, StatusReporter, statusFields } from './status.js';
import { PendingSubscriptions } from './subscriptions.js';

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
  const recorder = new Recorder(engine, options, hooks);
  await recorder.start();
  return recorder;
}

/**
 * One recorder run: the market feed's frames go, in arrival order, into the archive and through the
 * normalizer into the buffered sink, with the run's capture records among them.
 */
export class Recorder {
  private readonly run = `rec-${randomUUID()}`;
  private readonly sink: BufferedSink;
  private readonly archive: FrameArchive | null;
  private readonly normalizer: Normalizer;
  private readonly feed: MarketFeed;
  private readonly discovery: MarketDiscovery;
  private readonly resync = new ResyncTracker();
  private readonly malformed = new MalformedFrameLog();
  private readonly reporter: StatusReporter;
  private readonly subscriptions: PendingSubscriptions;
  private frames = 0;
  private pongs = 0;
  /** Set when stop() begins: what the sockets still deliver until they close is not recorded. */
  private stopped = false;
  private stopping: Promise<void> | null = null;

  constructor(
    engine: Engine,
    private readonly options: RecorderOptions,
    hooks: RecorderHooks = {},
  ) {
    this.sink = new BufferedSink(engine, {
      runId: this.run,
      batchRows: options.batchRows,
      batchAgeMs: options.batchAgeMs,
      maxBufferedRows: options.maxBufferedRows,
      retryMinMs: options.retryMinMs,
      retryMaxMs: options.retryMaxMs,
      onPressure: (full) => (full ? this.feed.pause() : this.feed.resume()),
    });
    this.archive = options.archiveDir ? new FrameArchive(options.archiveDir) : null;
    this.normalizer = new Normalizer(this.rowSink(), { seq: clockSeq() });
    this.feed = new MarketFeed({
      url: options.wsUrl,
      assetsPerSocket: options.assetsPerSocket,
      pingIntervalMs: options.pingIntervalMs,
      staleAfterMs: options.staleAfterMs,
      reconnectMinMs: options.reconnectMinMs,
      reconnectMaxMs: options.reconnectMaxMs,
      onSocketEvent: (e) => this.onSocketEvent(e),
      onMessage: (text, socket, receivedAt) => this.onMessage(text, socket, receivedAt),
    });
    this.subscriptions = new PendingSubscriptions(this.feed, options);
    this.discovery = new MarketDiscovery(options, (changed) => {
      this.normalizer.addMarkets(changed);
      this.subscribePending();
    });
    this.reporter = new StatusReporter(() => this.status(), hooks.onStatus);
  }

  /** Records the run's start, awaits the first discovery, subscribes, then refreshes and reports. */
  async start(): Promise<void> {
    this.capture('start', 0, []);
    await this.discovery.first();
    if (this.options.assets !== null) this.feed.subscribe(this.options.assets);
    const { assets, sockets } = this.feed.stats();
    log.info('recorder started', { assets, sockets, mode: this.options.assets === null ? 'active' : 'assets', archive: this.options.archiveDir });
    this.discovery.startRefresh();
    registerRecorderGauges({
      connected: () => this.feed.stats().connected,
      assets: () => this.feed.stats().assets,
      buffered: () => this.sink.stats.pending,
      paused: () => (this.sink.stats.full ? 1 : 0),
      lastInsertSeconds: () => this.sink.stats.lastInsertMs / 1000,
    });
    this.reporter.start(this.options.statusIntervalMs);
  }

  status(): RecorderStatus {
    const f = this.feed.stats();
    const n = this.normalizer.stats;
    return {
      frames: this.frames,
      pongs: this.pongs,
      malformed: n.malformed,
      unknown: n.unknown,
      rows: n.ticks + n.snapshots + n.checkpoints + n.markets + n.marketEvents,
      sockets: f.sockets,
      connected: f.connected,
      assets: f.assets,
      reconnects: f.reconnects,
      pingsSent: f.pingsSent,
      sink: { ...this.sink.stats, stored: { ...this.sink.stats.stored } },
      archive: this.archive ? { ...this.archive.stats } : null,
    };
  }

  /** Stops reading, stores every buffered row, writes the archive, closes the sockets. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.capture('stop', 0, []);
      this.stopped = true;
      this.discovery.stop();
      this.reporter.stop();
      await this.feed.close();
      if (this.sink.stats.pending > 0) log.info('recorder flushing buffered rows', { pending_rows: this.sink.stats.pending });
      await Promise.all([this.sink.flush(), this.archive?.flush()]);
      log.info('recorder stopped', statusFields({ ...this.status(), framesPerSec: 0, rowsPerSec: 0 }));
    })();
    return this.stopping;
  }

  /** The sink the normalizer writes to: the buffered sink, watched for re-synced books and new markets. */
  private rowSink(): RowSink {
    return {
      tick: (row) => this.sink.tick(row),
      snapshot: (row) => {
        this.sink.snapshot(row);
        this.resync.onSnapshot(row);
      },
      bookCheck: (row) => this.sink.bookCheck(row),
      capture: (row) => this.sink.capture(row),
      marketEvent: (row) => this.sink.marketEvent(row),
      market: (row) => {
        this.sink.market(row);
        this.subscriptions.onMarket(row.asset_id);
      },
    };
  }

  /**
   * A frame and its receive time (Unix µs): the archive line carries the time as its prefix
   * (docs/INGEST.md §3) and every row of the frame stores it as local_t, so replaying the archive
   * stores the rows recorded live.
   */
  private onMessage(text: string, socket: number, receivedAt: number): void {
    if (this.stopped) return;
    if (text === 'PONG') {
      this.pongs++;
      return;
    }
    this.frames++;
    recorderMetrics.frames.inc();
    this.archive?.append(receiveTimePrefix(receivedAt) + text, Math.floor(receivedAt / 1000));
    const malformed = this.normalizer.stats.malformed;
    this.resync.frameFrom(socket);
    this.normalizer.push(text, receivedAt);
    if (this.normalizer.stats.malformed !== malformed) this.malformed.record(text, this.normalizer.stats.malformed);
    const resynced = this.resync.takeResynced();
    if (resynced.length > 0) this.capture('resync', socket, resynced);
    this.subscribePending();
  }

  /** `recorder subscribed new assets` is logged only once a frame has arrived. */
  private subscribePending(): void {
    this.subscriptions.subscribe(this.frames > 0);
  }

  private onSocketEvent(e: SocketEvent): void {
    if (this.stopped) return;
    this.capture(e.kind, e.socket, e.assets, e.at);
    this.resync.onSocketEvent(e);
  }

  /**
   * A capture record goes into the archive as a line among the frames and through the normalizer
   * like one, so the rows stored live are the rows a replay of the archive stores.
   */
  private capture(kind: CaptureRecord['kind'], socket: number, assets: string[], t = Date.now()): void {
    const line = captureLine({ kind, t, run: this.run, socket, assets });
    this.archive?.append(line, t);
    this.normalizer.push(line);
  }
}
