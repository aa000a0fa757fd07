import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

/**
 * A local stand-in for Polymarket's market channel, speaking its wire protocol (docs/INGEST.md §1): takes
 * the subscribe message and live `subscribe` / `unsubscribe` operations, answers each subscription with
 * the initial dump (one array of the newly subscribed assets' books), then delivers published frames to
 * the connections subscribed to their assets; answers the text `PING` with `PONG`. Polymarket's limits
 * hold: a connection is served at most `maxAssetsPerConnection` assets (500; the ones past it get no
 * dump and no events, as on the real channel, and are listed in `ignored`), and a subscribe frame naming
 * more than `maxAssetsPerFrame` ids closes the connection (1009), as the real server closes on oversized
 * frames. It can drop connections, stop answering on one, refuse new ones, and close any socket that
 * stays silent longer than `pingTimeoutMs` (as the real server does).
 */
export interface WsServerOptions {
  /** Close a connection that sent no `PING` for this long. */
  pingTimeoutMs?: number;
  /** Default 500, Polymarket's documented per-connection bound. */
  maxAssetsPerConnection?: number;
  /**
   * Default 100: the ids per frame Polymarket's own client sends since larger frames made the server
   * close its connections (rs-clob-client-v2 #116/#117; the exact bound lies between 100 and a few thousand).
   */
  maxAssetsPerFrame?: number;
  /** Keep every frame sent in `sent` (default true; a long bench run counts instead). */
  keepSent?: boolean;
}

export interface Connection {
  id: number;
  /** The assets served on this connection. */
  assets: Set<string>;
  /** Assets subscribed past the per-connection limit: never served. */
  ignored: Set<string>;
  /** Every text message received, in order (subscriptions and PINGs). */
  received: string[];
  pings: number;
  closedBy: 'client' | 'server-drop' | 'server-silence' | 'server-frame-too-large' | null;
}

export interface SentCounts {
  /** Frames sent (the initial dumps included, PONG excluded). */
  frames: number;
  /** Events in them by type (a dump's books counted one by one). */
  events: Record<string, number>;
}

export interface PolymarketWsServer {
  url: string;
  connections: Connection[];
  /** Every frame sent to any connection, in send order (PONG excluded): what the feed itself delivered (empty with keepSent false). */
  sent: string[];
  counts: SentCounts;
  /** Sets the book an initial dump holds for its asset (a `book` event object). */
  setBook(book: Record<string, unknown>): void;
  /** Sends a frame to each open connection subscribed to one of its assets (all of them when it names none). Returns the number of connections reached. */
  publish(frame: string | object): number;
  /**
   * The fast path for large feeds: sends `text`, a frame of the one asset `asset` holding `events`
   * events of `type`, to the connections serving it, without parsing it. Returns the connections reached.
   */
  publishFor(asset: string, text: string, type: string, events?: number): number;
  /** Terminates every open connection, as a network failure would. */
  dropAll(): void;
  /** The server keeps that connection open but sends nothing more on it (no PONG, no frames, no dump). */
  mute(connectionId: number): void;
  /** false: new connections are refused at the upgrade (HTTP 503), as by a server that is down. */
  setAccepting(accepting: boolean): void;
  open(): Connection[];
  /**
   * Runs `send` with every connection's socket corked: the frames it publishes leave in one write per
   * connection (a feed of 100,000 frames a second would otherwise make as many system calls).
   */
  corked<T>(send: () => T): T;
  /** Resolves once every open connection's buffered frames have been handed to the kernel. */
  drained(): Promise<void>;
  close(): Promise<void>;
}

export async function startPolymarketWsServer(options: WsServerOptions = {}): Promise<PolymarketWsServer> {
  const maxAssets = options.maxAssetsPerConnection ?? 500;
  const maxPerFrame = options.maxAssetsPerFrame ?? 100;
  const keepSent = options.keepSent ?? true;
  let accepting = true;
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, verifyClient: (_info, done) => done(accepting, 503) });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  const connections: Connection[] = [];
  const sockets = new Map<Connection, WebSocket>();
  /** asset → the open connections serving it. */
  const serving = new Map<string, Set<Connection>>();
  const books = new Map<string, Record<string, unknown>>();
  const sent: string[] = [];
  const counts: SentCounts = { frames: 0, events: {} };
  const muted = new Set<number>();

  const count = (type: string, n: number) => {
    counts.events[type] = (counts.events[type] ?? 0) + n;
  };
  const send = (ws: WebSocket, text: string) => {
    counts.frames++;
    if (keepSent) sent.push(text);
    ws.send(text);
  };
  const dump = (conn: Connection, ws: WebSocket, assets: string[]) => {
    const snapshot = assets.map((a) => books.get(a)).filter((b) => b !== undefined);
    if (snapshot.length && !muted.has(conn.id)) {
      count('book', snapshot.length);
      send(ws, JSON.stringify(snapshot));
    }
  };
  const serve = (conn: Connection, asset: string) => {
    conn.assets.add(asset);
    let set = serving.get(asset);
    if (!set) serving.set(asset, (set = new Set()));
    set.add(conn);
  };
  const unserve = (conn: Connection, asset: string) => {
    conn.assets.delete(asset);
    conn.ignored.delete(asset);
    serving.get(asset)?.delete(conn);
  };

  /** A subscribe message or operation (anything else is ignored, as the real channel does). */
  const onSubscription = (conn: Connection, ws: WebSocket, text: string) => {
    let msg: { assets_ids?: unknown; type?: unknown; operation?: unknown };
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    const assets = Array.isArray(msg.assets_ids) ? msg.assets_ids.map(String) : [];
    if (assets.length > maxPerFrame) {
      conn.closedBy ??= 'server-frame-too-large';
      ws.close(1009, 'message too big');
    } else if (msg.type === 'market' || msg.operation === 'subscribe') {
      const fresh: string[] = [];
      for (const a of assets) {
        if (conn.assets.has(a) || conn.ignored.has(a)) continue;
        if (conn.assets.size >= maxAssets) conn.ignored.add(a);
        else {
          serve(conn, a);
          fresh.push(a);
        }
      }
      dump(conn, ws, fresh);
    } else if (msg.operation === 'unsubscribe') {
      for (const a of assets) unserve(conn, a);
    }
  };

  wss.on('connection', (ws) => {
    const conn: Connection = { id: connections.length + 1, assets: new Set(), ignored: new Set(), received: [], pings: 0, closedBy: null };
    connections.push(conn);
    sockets.set(conn, ws);
    let lastPing = Date.now();
    const silence = options.pingTimeoutMs
      ? setInterval(
          () => {
            if (Date.now() - lastPing <= options.pingTimeoutMs!) return;
            conn.closedBy ??= 'server-silence';
            ws.close(1000, 'no PING');
          },
          Math.max(10, options.pingTimeoutMs / 4),
        )
      : null;
    ws.on('message', (data) => {
      const text = data.toString();
      conn.received.push(text);
      if (text === 'PING') {
        conn.pings++;
        lastPing = Date.now();
        if (!muted.has(conn.id)) ws.send('PONG');
      } else onSubscription(conn, ws, text);
    });
    ws.on('close', () => {
      conn.closedBy ??= 'client';
      sockets.delete(conn);
      for (const a of conn.assets) serving.get(a)?.delete(conn);
      if (silence) clearInterval(silence);
    });
  });

  const live = (conn: Connection, ws: WebSocket) => ws.readyState === ws.OPEN && !muted.has(conn.id);

  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    connections,
    sent,
    counts,
    setBook(book) {
      books.set(String(book.asset_id), book);
    },
    publish(frame) {
      const text = typeof frame === 'string' ? frame : JSON.stringify(frame);
      const { assets, events } = describe(text);
      let reached = 0;
      for (const [conn, ws] of sockets) {
        if (!live(conn, ws) || (assets.length && !assets.some((a) => conn.assets.has(a)))) continue;
        send(ws, text);
        for (const [type, n] of Object.entries(events)) count(type, n);
        reached++;
      }
      return reached;
    },
    publishFor(asset, text, type, events = 1) {
      let reached = 0;
      for (const conn of serving.get(asset) ?? []) {
        const ws = sockets.get(conn);
        if (!ws || !live(conn, ws)) continue;
        send(ws, text);
        count(type, events);
        reached++;
      }
      return reached;
    },
    dropAll() {
      for (const [conn, ws] of sockets) {
        conn.closedBy ??= 'server-drop';
        ws.terminate();
      }
    },
    mute(connectionId) {
      muted.add(connectionId);
    },
    setAccepting(on) {
      accepting = on;
    },
    open: () => [...sockets.keys()],
    corked(send) {
      // ws keeps its net.Socket private; corking it is the documented way to batch writes (net.Socket#cork).
      const raw = [...sockets.values()].map((ws) => (ws as unknown as { _socket: import('node:net').Socket | null })._socket).filter((x) => x !== null);
      for (const socket of raw) socket.cork();
      try {
        return send();
      } finally {
        for (const socket of raw) socket.uncork();
      }
    },
    async drained() {
      while ([...sockets.values()].some((ws) => ws.bufferedAmount > 0)) await new Promise((r) => setTimeout(r, 5));
    },
    async close() {
      for (const ws of sockets.values()) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/**
 * The assets a frame concerns (none for frames without any: new_market, malformed text, which go to
 * everyone) and its events by type (a price_change's items counted one by one).
 */
function describe(text: string): { assets: string[]; events: Record<string, number> } {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    return { assets: [], events: {} };
  }
  const assets = new Set<string>();
  const events: Record<string, number> = {};
  for (const e of Array.isArray(frame) ? frame : [frame]) {
    if (typeof e !== 'object' || e === null) continue;
    const type = String(e.event_type);
    const items = Array.isArray(e.price_changes) ? e.price_changes.length : 1;
    events[type] = (events[type] ?? 0) + items;
    if (e.event_type === 'new_market') continue;
    if (typeof e.asset_id === 'string') assets.add(e.asset_id);
    if (Array.isArray(e.price_changes)) for (const c of e.price_changes) if (typeof c?.asset_id === 'string') assets.add(c.asset_id);
  }
  return { assets: [...assets], events };
}
