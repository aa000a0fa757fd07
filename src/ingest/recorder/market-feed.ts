import WebSocket from 'ws';
import { errorText, log } from '../../log.js';
import { receivedNow } from '../receive-time.js';
import { recorderMetrics } from './metrics.js';

export interface FeedOptions {
  url: string;
  assetsPerSocket: number;
  pingIntervalMs: number;
  staleAfterMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /**
   * Every text message exactly as received (frames and `PONG`), in arrival order per socket, with its
   * receive time (Unix µs, taken as the message event fires).
   */
  onMessage: (text: string, socket: number, receivedAt: number) => void;
  /** Each socket's lifecycle, for the capture records; called before the messages that follow it. */
  onSocketEvent?: (event: SocketEvent) => void;
}

/**
 * `subscribe`: assets were given to the socket. `open`: they are live on it (the connection opened
 * and subscribed to all of its assets, or an open socket subscribed to new ones). `close`: an open
 * connection was lost; the socket reconnects. `unsubscribe`: the assets left the socket (their market
 * resolved or left Gamma's live list). Closing the feed reports nothing.
 */
export interface SocketEvent {
  kind: 'subscribe' | 'open' | 'close' | 'unsubscribe';
  /** Wall-clock time, Unix ms: a subscription on an open socket is live the instant it is made. */
  at: number;
  socket: number;
  assets: string[];
}

export interface FeedStats {
  sockets: number;
  connected: number;
  assets: number;
  reconnects: number;
  pingsSent: number;
}

/**
 * Asset ids per subscribe frame. Polymarket's market channel closes a connection whose subscribe frame
 * carries thousands of ids; its own Rust client (rs-clob-client-v2 #117) sends them 100 per frame.
 */
export const MAX_ASSETS_PER_FRAME = 100;

/**
 * Polymarket's market channel over several sockets, each holding at most `assetsPerSocket` assets.
 * Assets added later fill a socket with room (a live `subscribe` operation) or open a new one, and
 * assets that leave free their room, so the recorder never restarts to follow the venue.
 */
export class MarketFeed {
  private readonly sockets: MarketSocket[] = [];
  /** asset → the socket holding it. */
  private readonly subscribed = new Map<string, MarketSocket>();
  private paused = false;
  private closed = false;
  reconnects = 0;
  pingsSent = 0;

  constructor(private readonly options: FeedOptions) {}

  /** Subscribes the assets not subscribed yet; returns how many were new. */
  subscribe(assets: Iterable<string>): number {
    if (this.closed) return 0;
    const fresh = [...new Set(assets)].filter((a) => !this.subscribed.has(a));
    let i = 0;
    while (i < fresh.length) {
      let socket = this.sockets.find((s) => s.room() > 0);
      if (!socket) {
        socket = new MarketSocket(this.sockets.length + 1, this.options, this);
        this.sockets.push(socket);
        if (this.paused) socket.pause();
      }
      const part = fresh.slice(i, i + socket.room());
      for (const a of part) this.subscribed.set(a, socket);
      socket.add(part);
      i += part.length;
    }
    return fresh.length;
  }

  /** Unsubscribes the assets subscribed now; returns how many were. */
  unsubscribe(assets: Iterable<string>): number {
    if (this.closed) return 0;
    const bySocket = new Map<MarketSocket, string[]>();
    for (const a of new Set(assets)) {
      const socket = this.subscribed.get(a);
      if (!socket) continue;
      this.subscribed.delete(a);
      const list = bySocket.get(socket);
      if (list) list.push(a);
      else bySocket.set(socket, [a]);
    }
    let left = 0;
    for (const [socket, part] of bySocket) {
      socket.remove(part);
      left += part.length;
    }
    return left;
  }

  isSubscribed(asset: string): boolean {
    return this.subscribed.has(asset);
  }

  /** Stops reading (back-pressure); pings go on so the server keeps the sockets. */
  pause(): void {
    this.paused = true;
    this.sockets.forEach((s) => s.pause());
  }

  resume(): void {
    this.paused = false;
    this.sockets.forEach((s) => s.resume());
  }

  stats(): FeedStats {
    return {
      sockets: this.sockets.length,
      connected: this.sockets.filter((s) => s.isOpen()).length,
      assets: this.subscribed.size,
      reconnects: this.reconnects,
      pingsSent: this.pingsSent,
    };
  }

  /** Closes every socket; resolves once they are closed, after which no message is delivered. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.sockets.map((s) => s.close()));
  }
}

/** One connection: subscribes on every open, pings, watches for silence, reconnects with backoff. */
class MarketSocket {
  /** Insertion-ordered: a reconnect subscribes in the order the assets came. */
  private readonly assets = new Set<string>();
  private ws: WebSocket | null = null;
  private attempt = 0;
  private pinger: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private retry: NodeJS.Timeout | null = null;
  private paused = false;
  private closing = false;

  constructor(
    private readonly id: number,
    private readonly options: FeedOptions,
    private readonly feed: MarketFeed,
  ) {}

  room(): number {
    return this.options.assetsPerSocket - this.assets.size;
  }

  isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  add(assets: string[]): void {
    for (const a of assets) this.assets.add(a);
    const at = Date.now();
    this.options.onSocketEvent?.({ kind: 'subscribe', at, socket: this.id, assets });
    if (this.isOpen()) {
      for (const part of chunks(assets)) this.send({ assets_ids: part, operation: 'subscribe' });
      this.options.onSocketEvent?.({ kind: 'open', at, socket: this.id, assets });
    } else if (!this.ws && !this.retry) this.connect();
    // A socket still connecting subscribes to the whole list when it opens.
  }

  /** The assets leave this socket (told to the server when it is open; a reconnect no longer names them). */
  remove(assets: string[]): void {
    for (const a of assets) this.assets.delete(a);
    if (this.isOpen()) for (const part of chunks(assets)) this.send({ assets_ids: part, operation: 'unsubscribe' });
    this.options.onSocketEvent?.({ kind: 'unsubscribe', at: Date.now(), socket: this.id, assets });
  }

  pause(): void {
    this.paused = true;
    this.ws?.pause();
    this.stopWatchdog();
  }

  resume(): void {
    this.paused = false;
    this.ws?.resume();
    this.armWatchdog();
  }

  close(): Promise<void> {
    this.closing = true;
    if (this.retry) clearTimeout(this.retry);
    this.stopTimers();
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      ws.once('close', () => resolve());
      // A server that does not answer the close handshake must not hold the shutdown.
      const force = setTimeout(() => ws.terminate(), 2000);
      ws.once('close', () => clearTimeout(force));
      ws.close(1000);
    });
  }

  private connect(): void {
    this.retry = null;
    const ws = new WebSocket(this.options.url, { perMessageDeflate: false });
    this.ws = ws;
    let opened = false;
    ws.on('open', () => {
      opened = true;
      log.info('recorder socket connected', { socket: this.id, assets: this.assets.size, attempt: this.attempt });
      // The first frame opens the subscription; the rest of a full socket follows as subscribe operations.
      const [first = [], ...rest] = chunks([...this.assets]);
      this.send({ assets_ids: first, type: 'market', custom_feature_enabled: true, initial_dump: true });
      for (const part of rest) this.send({ assets_ids: part, operation: 'subscribe' });
      this.options.onSocketEvent?.({ kind: 'open', at: Date.now(), socket: this.id, assets: [...this.assets] });
      this.pinger = setInterval(() => {
        if (ws.readyState !== WebSocket.OPEN) return;
        ws.send('PING');
        this.feed.pingsSent++;
      }, this.options.pingIntervalMs);
      if (this.paused) ws.pause();
      else this.armWatchdog();
    });
    ws.on('message', (data, isBinary) => {
      const receivedAt = receivedNow();
      if (this.closing) return;
      // The backoff restarts only once the server has spoken: an accept-then-drop loop keeps backing off.
      this.attempt = 0;
      this.armWatchdog();
      this.options.onMessage(isBinary ? Buffer.from(data as Buffer).toString('utf8') : data.toString(), this.id, receivedAt);
    });
    ws.on('error', (err) => {
      if (!this.closing) log.warn('recorder socket error', { socket: this.id, error: errorText(err) });
    });
    ws.on('close', (code, reason) => {
      this.stopTimers();
      if (this.ws === ws) this.ws = null;
      if (this.closing) return;
      // A connection that never opened had nothing live on it.
      if (opened && this.assets.size > 0) this.options.onSocketEvent?.({ kind: 'close', at: Date.now(), socket: this.id, assets: [...this.assets] });
      const delay = this.backoff();
      log.warn('recorder socket closed; reconnecting', { socket: this.id, code, reason: reason.toString(), retry_in_ms: delay });
      this.feed.reconnects++;
      recorderMetrics.reconnects.inc();
      this.retry = setTimeout(() => this.connect(), delay);
    });
  }

  /** Exponential backoff with full jitter in its upper half, so many sockets do not reconnect in step. */
  private backoff(): number {
    const ceiling = Math.min(this.options.reconnectMaxMs, this.options.reconnectMinMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
  }

  private armWatchdog(): void {
    this.stopWatchdog();
    const ws = this.ws;
    if (!ws || this.paused || this.closing) return;
    this.watchdog = setTimeout(() => {
      log.warn('recorder socket silent; replacing it', { socket: this.id, silent_ms: this.options.staleAfterMs });
      ws.terminate();
    }, this.options.staleAfterMs);
  }

  private stopWatchdog(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
  }

  private stopTimers(): void {
    if (this.pinger) clearInterval(this.pinger);
    this.pinger = null;
    this.stopWatchdog();
  }

  private send(message: object): void {
    this.ws?.send(JSON.stringify(message));
  }
}

/** The list in frames of at most MAX_ASSETS_PER_FRAME ids. */
function chunks(assets: readonly string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < assets.length; i += MAX_ASSETS_PER_FRAME) out.push(assets.slice(i, i + MAX_ASSETS_PER_FRAME));
  return out;
}
