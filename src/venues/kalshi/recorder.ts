import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { Engine } from '../../clickhouse/engine.js';
import { type CaptureRecord, captureLine } from '../../ingest/capture-record.js';
import type { RowSink } from '../../ingest/normalizer.js';
import { receivedNow, receiveTimePrefix } from '../../ingest/receive-time.js';
import { BufferedSink, type SinkStats } from '../../ingest/recorder/buffered-sink.js';
import { FrameArchive } from '../../ingest/recorder/frame-archive.js';
import { clockSeq } from '../../ingest/recorder/recorder.js';
import { ResyncTracker } from '../../ingest/recorder/resync.js';
import { errorText, log } from '../../log.js';
import { signedHeaders } from './auth.js';
import { kalshiAssetId } from './ids.js';
import { fetchMarkets, KalshiAuthError } from './markets.js';
import { KalshiNormalizer, type KalshiNormalizerStats } from './normalizer.js';
import type { KalshiRecorderOptions } from './options.js';

/** The one socket of a Kalshi run, as capture records name it. */
const SOCKET = 1;

export interface KalshiRecorderStatus {
  frames: number;
  connected: boolean;
  /** Markets subscribed (their orderbook_delta subscription acknowledged). */
  assets: number;
  live: number;
  reconnects: number;
  /** Handshakes Kalshi refused (HTTP status on the upgrade: a bad key or signature). */
  refused: number;
  resubscribes: number;
  normalizer: KalshiNormalizerStats;
  sink: SinkStats;
}

export async function startKalshiRecorder(engine: Engine, options: KalshiRecorderOptions): Promise<KalshiRecorder> {
  const recorder = new KalshiRecorder(engine, options);
  await recorder.start();
  return recorder;
}

/**
 * The Kalshi recorder (docs/KALSHI.md §3): one signed WebSocket to `/trade-api/ws/v2`, markets from REST
 * discovery subscribed on `orderbook_delta` and `trade` in commands of `tickersPerCommand`; every message
 * goes, in arrival order, into the archive (`kalshi-YYYY-MM-DD.jsonl.gz`, receive-time prefixed) and
 * through the Kalshi normalizer into the Polymarket recorder's buffered sink, with the same capture records
 * (start, subscribe, open, resync, close, stop). A seq gap on an orderbook subscription is a `close` of its
 * markets, an unsubscribe, and a new subscription whose snapshots re-sync them (`open`, `resync`).
 */
export class KalshiRecorder {
  private readonly run = `rec-${randomUUID()}`;
  private readonly sink: BufferedSink;
  private readonly archive: FrameArchive | null;
  private readonly normalizer: KalshiNormalizer;
  private readonly resync = new ResyncTracker();
  /** Markets to record, in the order they came (kalshi ids). */
  private readonly wanted = new Set<string>();
  /** Markets whose orderbook subscription is acknowledged on the open socket. */
  private readonly live = new Set<string>();
  /** Command id → the markets of that subscribe command (its orderbook_delta ack makes them live). */
  private readonly pending = new Map<number, string[]>();
  /** orderbook_delta sid → its markets. */
  private readonly bookSids = new Map<number, string[]>();
  private ws: WebSocket | null = null;
  private nextId = 1;
  private attempt = 0;
  private retry: NodeJS.Timeout | null = null;
  private refresh: NodeJS.Timeout | null = null;
  private statusTimer: NodeJS.Timeout | null = null;
  private frames = 0;
  private reconnects = 0;
  private refused = 0;
  private resubscribes = 0;
  private stopped = false;
  private stopping: Promise<void> | null = null;

  constructor(
    engine: Engine,
    private readonly options: KalshiRecorderOptions,
  ) {
    this.sink = new BufferedSink(engine, {
      runId: this.run,
      batchRows: options.batchRows,
      batchAgeMs: options.batchAgeMs,
      maxBufferedRows: options.maxBufferedRows,
      retryMinMs: options.retryMinMs,
      retryMaxMs: options.retryMaxMs,
      onPressure: (full) => (full ? this.ws?.pause() : this.ws?.resume()),
    });
    this.archive = options.archiveDir ? new FrameArchive(options.archiveDir, { venue: 'kalshi' }) : null;
    this.normalizer = new KalshiNormalizer(this.rowSink(), { seq: clockSeq() });
  }

  /** Records the start, discovers the markets (a refused key throws), connects and subscribes. */
  async start(): Promise<void> {
    this.capture('start', []);
    await this.discover();
    this.connect();
    log.info('kalshi recorder started', { markets: this.wanted.size, mode: this.options.tickers ? 'assets' : 'all', archive: this.options.archiveDir });
    if (this.options.discoveryIntervalMs > 0 && this.options.tickers === null)
      this.refresh = setInterval(() => {
        this.discover().catch((err) => log.warn('kalshi market refresh failed; keeping the current subscriptions', { error: errorText(err) }));
      }, this.options.discoveryIntervalMs);
    if (this.options.statusIntervalMs > 0)
      this.statusTimer = setInterval(() => {
        const s = this.status();
        log.info('kalshi recorder status', {
          frames: s.frames,
          assets: s.assets,
          live: s.live,
          stored_ticks: s.sink.stored.ticks,
          pending: s.sink.pending,
          gaps: s.normalizer.gaps,
        });
      }, this.options.statusIntervalMs);
  }

  status(): KalshiRecorderStatus {
    return {
      frames: this.frames,
      connected: this.ws?.readyState === WebSocket.OPEN,
      assets: this.live.size,
      live: this.wanted.size,
      reconnects: this.reconnects,
      refused: this.refused,
      resubscribes: this.resubscribes,
      normalizer: { ...this.normalizer.stats, events: { ...this.normalizer.stats.events } },
      sink: { ...this.sink.stats, stored: { ...this.sink.stats.stored } },
    };
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.capture('stop', []);
      this.stopped = true;
      if (this.refresh) clearInterval(this.refresh);
      if (this.statusTimer) clearInterval(this.statusTimer);
      if (this.retry) clearTimeout(this.retry);
      const ws = this.ws;
      if (ws && ws.readyState !== WebSocket.CLOSED) {
        await new Promise<void>((resolve) => {
          const force = setTimeout(() => ws.terminate(), 2000);
          ws.once('close', () => {
            clearTimeout(force);
            resolve();
          });
          ws.close(1000);
        });
      }
      await Promise.all([this.sink.flush(), this.archive?.flush()]);
      log.info('kalshi recorder stopped', { frames: this.frames, stored_ticks: this.sink.stats.stored.ticks });
    })();
    return this.stopping;
  }

  /** REST discovery: new markets get their `markets` rows and, on an open socket, a subscription. */
  private async discover(): Promise<void> {
    let rows: Awaited<ReturnType<typeof fetchMarkets>>;
    try {
      rows = await fetchMarkets(this.options.restUrl, this.options.credentials, this.options.tickers, this.options.maxAssets);
    } catch (err) {
      if (err instanceof KalshiAuthError) log.error(err.message, { key_id: this.options.credentials.keyId });
      throw err;
    }
    if (this.stopped) return;
    const fresh = rows.filter((r) => !this.wanted.has(r.asset_id));
    this.normalizer.addMarkets(fresh);
    for (const r of fresh) this.wanted.add(r.asset_id);
    // Given tickers Kalshi does not list are recorded too (their rows are labelled YES all the same).
    for (const t of this.options.tickers ?? []) this.wanted.add(kalshiAssetId(t));
    const toJoin = [...this.wanted].filter((a) => !this.live.has(a) && ![...this.pending.values()].some((p) => p.includes(a)));
    if (this.ws?.readyState === WebSocket.OPEN && toJoin.length > 0) this.subscribe(toJoin);
  }

  private connect(): void {
    this.retry = null;
    const url = new URL(this.options.wsUrl);
    const ws = new WebSocket(this.options.wsUrl, { perMessageDeflate: false, headers: signedHeaders(this.options.credentials, 'GET', url.pathname) });
    this.ws = ws;
    let opened = false;
    ws.on('unexpected-response', (_req, res) => {
      this.refused++;
      const status = res.statusCode ?? 0;
      const what = status === 401 || status === 403 ? 'Kalshi refused the API key on the WebSocket handshake' : 'Kalshi refused the WebSocket handshake';
      log.error(what, { status, key_id: this.options.credentials.keyId });
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      opened = true;
      log.info('kalshi socket connected', { markets: this.wanted.size, attempt: this.attempt });
      this.subscribe([...this.wanted]);
    });
    ws.on('message', (data, isBinary) => {
      const receivedAt = receivedNow();
      if (this.stopped) return;
      this.attempt = 0;
      this.onMessage(isBinary ? Buffer.from(data as Buffer).toString('utf8') : data.toString(), receivedAt);
    });
    ws.on('error', (err) => {
      if (!this.stopped) log.warn('kalshi socket error', { error: errorText(err) });
    });
    ws.on('close', (code, reason) => {
      if (this.ws === ws) this.ws = null;
      if (this.stopped) return;
      if (opened && this.live.size > 0) this.capture('close', [...this.live]);
      this.live.clear();
      this.pending.clear();
      this.bookSids.clear();
      this.resync.onSocketEvent({ kind: 'close', at: Date.now(), socket: SOCKET, assets: [] });
      const ceiling = Math.min(this.options.reconnectMaxMs, this.options.reconnectMinMs * 2 ** this.attempt);
      this.attempt = Math.min(this.attempt + 1, 30);
      const delay = Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
      log.warn('kalshi socket closed; reconnecting', { code, reason: reason.toString(), retry_in_ms: delay });
      this.reconnects++;
      this.retry = setTimeout(() => this.connect(), delay);
    });
  }

  /** Subscribe commands for orderbook_delta and trade, `tickersPerCommand` markets each. */
  private subscribe(assets: string[], channels: string[] = ['orderbook_delta', 'trade']): void {
    for (let i = 0; i < assets.length; i += this.options.tickersPerCommand) {
      const part = assets.slice(i, i + this.options.tickersPerCommand);
      const id = this.nextId++;
      this.pending.set(id, part);
      this.capture('subscribe', part);
      this.send({ id, cmd: 'subscribe', params: { channels, market_tickers: part.map((a) => a.slice('kalshi:'.length)) } });
    }
  }

  private onMessage(text: string, receivedAt: number): void {
    this.frames++;
    this.archive?.append(receiveTimePrefix(receivedAt) + text, Math.floor(receivedAt / 1000));
    let message: { type?: unknown; id?: unknown; msg?: { channel?: unknown; sid?: unknown; code?: unknown; msg?: unknown } } | null = null;
    try {
      message = JSON.parse(text);
    } catch {
      // The normalizer counts it as malformed.
    }
    // A subscription acknowledged: its markets are live from now (and await their snapshot).
    if (message?.type === 'subscribed' && message.msg?.channel === 'orderbook_delta' && typeof message.id === 'number') {
      const assets = this.pending.get(message.id) ?? [];
      this.pending.delete(message.id);
      if (typeof message.msg.sid === 'number') this.bookSids.set(message.msg.sid, assets);
      for (const a of assets) this.live.add(a);
      if (assets.length > 0) {
        this.capture('open', assets);
        this.resync.onSocketEvent({ kind: 'open', at: Date.now(), socket: SOCKET, assets });
      }
    } else if (message?.type === 'error') {
      log.error('kalshi command failed', { id: message.id, code: message.msg?.code, msg: message.msg?.msg });
    }
    this.resync.frameFrom(SOCKET);
    this.normalizer.push(text, receivedAt);
    const resynced = this.resync.takeResynced();
    if (resynced.length > 0) this.capture('resync', resynced);
    for (const gap of this.normalizer.takeGaps()) this.onGap(gap.sid, gap.expected, gap.got);
  }

  /** A seq gap: the subscription's markets are not covered from now until a new subscription's snapshots. */
  private onGap(sid: number, expected: number, got: number): void {
    const assets = this.bookSids.get(sid) ?? [];
    this.bookSids.delete(sid);
    log.warn('kalshi orderbook seq gap: resubscribing for a fresh snapshot', { sid, expected, got, markets: assets.length });
    this.resubscribes++;
    for (const a of assets) this.live.delete(a);
    if (assets.length > 0) this.capture('close', assets);
    this.send({ id: this.nextId++, cmd: 'unsubscribe', params: { sids: [sid] } });
    if (assets.length > 0) this.subscribe(assets, ['orderbook_delta']);
  }

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
      market: (row) => this.sink.market(row),
    };
  }

  private send(message: object): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  /** A capture record into the archive and through the normalizer, as the Polymarket recorder writes them. */
  private capture(kind: CaptureRecord['kind'], assets: string[]): void {
    const t = Date.now();
    const line = captureLine({ kind, t, run: this.run, socket: kind === 'start' || kind === 'stop' ? 0 : SOCKET, assets });
    this.archive?.append(line, t);
    this.normalizer.push(line);
  }
}
