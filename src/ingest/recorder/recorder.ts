import { randomUUID } from 'node:crypto';
import type { Engine } from '../../clickhouse/engine.js';
import type { ProtocolRow } from '../../clickhouse/rows.js';
import { errorText, log } from '../../log.js';
import { type CaptureRecord, captureLine } from '../capture-record.js';
import { storeProtocols } from '../market-protocols.js';
import { Normalizer, type RowSink, type SeqSource } from '../normalizer.js';
import { receiveTimePrefix } from '../receive-time.js';
import { BufferedSink } from './buffered-sink.js';
import { type Discovered, MarketDiscovery } from './discovery.js';
import { FrameArchive } from './frame-archive.js';
import { MarketFeed, type SocketEvent } from './market-feed.js';
import { recorderMetrics, registerRecorderGauges } from './metrics.js';
import type { RecorderOptions } from './options.js';
import { ResyncTracker } from './resync.js';
import { SilentTokens } from './silent-tokens.js';
import { MalformedFrameLog, type RecorderStatus, type StatusReport, StatusReporter, statusFields } from './status.js';
import { Subscriptions } from './subscriptions.js';

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
  private readonly subscriptions: Subscriptions;
  private readonly silent: SilentTokens;
  /** Tokens whose market_resolved the current frame carried: they leave once the frame is done. */
  private resolvedInFrame: string[] = [];
  /** Protocol versions from Gamma not stored yet (a failed write is tried again with the next ones). */
  private pendingProtocols: ProtocolRow[] = [];
  private protocolWrites: Promise<void> = Promise.resolve();
  private frames = 0;
  private pongs = 0;
  /** Set when stop() begins: what the sockets still deliver until they close is not recorded. */
  private stopped = false;
  private stopping: Promise<void> | null = null;

  constructor(
    private readonly engine: Engine,
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
    this.subscriptions = new Subscriptions(this.feed, options);
    this.silent = new SilentTokens(options.staleAfterMs);
    this.discovery = new MarketDiscovery(options, (d) => this.onDiscovered(d));
    this.reporter = new StatusReporter(() => this.status(), hooks.onStatus);
  }

  /** Records the run's start, awaits the first discovery, subscribes, then refreshes and reports. */
  async start(): Promise<void> {
    this.capture('start', 0, []);
    await this.discovery.first();
    this.subscriptions.apply(false);
    const { assets, sockets } = this.feed.stats();
    log.info('recorder started', { assets, sockets, mode: this.options.assets === null ? 'all' : 'assets', archive: this.options.archiveDir });
    this.discovery.startRefresh();
    registerRecorderGauges({
      connected: () => this.feed.stats().connected,
      assets: () => this.feed.stats().assets,
      live: () => this.subscriptions.live(),
      silent: () => this.silent.count(),
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
      live: this.subscriptions.live(),
      silent: this.silent.count(),
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
      this.queueProtocols([]);
      await Promise.all([this.sink.flush(), this.archive?.flush(), this.protocolWrites]);
      log.info('recorder stopped', statusFields({ ...this.status(), framesPerSec: 0, rowsPerSec: 0 }));
    })();
    return this.stopping;
  }

  /** The sink the normalizer writes to: the buffered sink, watched for re-synced books and new markets. */
  private rowSink(): RowSink {
    return {
      tick: (row) => {
        this.sink.tick(row);
        this.silent.heard(row.asset_id);
      },
      snapshot: (row) => {
        this.sink.snapshot(row);
        this.resync.onSnapshot(row);
        this.silent.heard(row.asset_id);
      },
      bookCheck: (row) => this.sink.bookCheck(row),
      capture: (row) => this.sink.capture(row),
      marketEvent: (row) => {
        this.sink.marketEvent(row);
        this.silent.heard(row.asset_id);
        if (row.event === 'market_resolved') this.resolvedInFrame.push(row.asset_id);
      },
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
    if (this.resolvedInFrame.length > 0) {
      this.subscriptions.onResolved(this.resolvedInFrame);
      this.resolvedInFrame = [];
    }
    this.subscriptions.apply(true);
  }

  /**
   * A Gamma answer: its metadata through the normalizer (labels, `markets` rows, new tokens to join),
   * its protocol versions to market_protocols, and with a complete `--all` walk the live list (tokens
   * that left it leave). `recorder subscribed new assets` is logged only once a frame has arrived.
   */
  private onDiscovered(d: Discovered): void {
    if (this.stopped) return;
    this.normalizer.addMarkets(d.changed);
    this.queueProtocols(d.protocols);
    if (d.live) this.subscriptions.onLiveList(d.live);
    this.subscriptions.apply(this.frames > 0);
  }

  /** Stores protocol versions one write after another; rows of a failed write wait for the next one. */
  private queueProtocols(rows: readonly ProtocolRow[]): void {
    this.pendingProtocols.push(...rows);
    this.protocolWrites = this.protocolWrites.then(async () => {
      const batch = this.pendingProtocols;
      if (batch.length === 0) return;
      this.pendingProtocols = [];
      try {
        await storeProtocols(this.engine, batch);
      } catch (err) {
        this.pendingProtocols = [...batch, ...this.pendingProtocols];
        log.warn('market protocol versions not stored yet; retrying with the next Gamma answer', { rows: batch.length, error: errorText(err) });
      }
    });
  }

  private onSocketEvent(e: SocketEvent): void {
    if (this.stopped || e.assets.length === 0) return;
    this.capture(e.kind, e.socket, e.assets, e.at);
    this.resync.onSocketEvent(e);
    this.silent.onSocketEvent(e);
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
