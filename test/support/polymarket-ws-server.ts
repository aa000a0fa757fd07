import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

/**
 * A local stand-in for Polymarket's market channel, speaking its wire protocol (docs/INGEST.md §1): takes
 * the subscribe message and live `subscribe` operations, answers with the initial dump (one array of
 * the subscribed assets' books), then delivers published frames to the connections subscribed to
 * their assets; answers the text `PING` with `PONG`. It can drop connections, stop answering on one,
 * refuse new ones, and close any socket that stays silent longer than `pingTimeoutMs` (as the real
 * server does).
 */
export interface WsServerOptions {
  /** Close a connection that sent no `PING` for this long. */
  pingTimeoutMs?: number;
}

export interface Connection {
  id: number;
  assets: Set<string>;
  /** Every text message received, in order (subscriptions and PINGs). */
  received: string[];
  pings: number;
  closedBy: 'client' | 'server-drop' | 'server-silence' | null;
}

export interface PolymarketWsServer {
  url: string;
  connections: Connection[];
  /** Every frame sent to any connection, in send order (PONG excluded): what the feed itself delivered. */
  sent: string[];
  /** Sets the book an initial dump holds for its asset (a `book` event object). */
  setBook(book: Record<string, unknown>): void;
  /** Sends a frame to each open connection subscribed to one of its assets (all of them when it names none). Returns the number of connections reached. */
  publish(frame: string | object): number;
  /** Terminates every open connection, as a network failure would. */
  dropAll(): void;
  /** The server keeps that connection open but sends nothing more on it (no PONG, no frames, no dump). */
  mute(connectionId: number): void;
  /** false: new connections are refused at the upgrade (HTTP 503), as by a server that is down. */
  setAccepting(accepting: boolean): void;
  open(): Connection[];
  close(): Promise<void>;
}

export async function startPolymarketWsServer(options: WsServerOptions = {}): Promise<PolymarketWsServer> {
  let accepting = true;
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, verifyClient: (_info, done) => done(accepting, 503) });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  const connections: Connection[] = [];
  const sockets = new Map<Connection, WebSocket>();
  const books = new Map<string, Record<string, unknown>>();
  const sent: string[] = [];
  const muted = new Set<number>();

  const send = (ws: WebSocket, text: string) => {
    sent.push(text);
    ws.send(text);
  };
  const dump = (conn: Connection, ws: WebSocket, assets: string[]) => {
    const snapshot = assets.map((a) => books.get(a)).filter((b) => b !== undefined);
    if (snapshot.length && !muted.has(conn.id)) send(ws, JSON.stringify(snapshot));
  };

  wss.on('connection', (ws) => {
    const conn: Connection = { id: connections.length + 1, assets: new Set(), received: [], pings: 0, closedBy: null };
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
        return;
      }
      let msg: { assets_ids?: unknown; type?: unknown; operation?: unknown };
      try {
        msg = JSON.parse(text);
      } catch {
        return;
      }
      const assets = Array.isArray(msg.assets_ids) ? msg.assets_ids.map(String) : [];
      if (msg.type === 'market' || msg.operation === 'subscribe') {
        assets.forEach((a) => conn.assets.add(a));
        dump(conn, ws, assets);
      } else if (msg.operation === 'unsubscribe') {
        assets.forEach((a) => conn.assets.delete(a));
      }
    });
    ws.on('close', () => {
      conn.closedBy ??= 'client';
      sockets.delete(conn);
      if (silence) clearInterval(silence);
    });
  });

  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    connections,
    sent,
    setBook(book) {
      books.set(String(book.asset_id), book);
    },
    publish(frame) {
      const text = typeof frame === 'string' ? frame : JSON.stringify(frame);
      const assets = assetsOf(text);
      let reached = 0;
      for (const [conn, ws] of sockets) {
        if (ws.readyState !== ws.OPEN || muted.has(conn.id) || (assets.length && !assets.some((a) => conn.assets.has(a)))) continue;
        send(ws, text);
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
    async close() {
      for (const ws of sockets.values()) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** The assets a frame concerns; none for frames without any (new_market, malformed text): those go to everyone. */
function assetsOf(text: string): string[] {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    return [];
  }
  const out = new Set<string>();
  for (const e of Array.isArray(frame) ? frame : [frame]) {
    if (typeof e !== 'object' || e === null || e.event_type === 'new_market') continue;
    if (typeof e.asset_id === 'string') out.add(e.asset_id);
    if (Array.isArray(e.price_changes)) for (const c of e.price_changes) if (typeof c?.asset_id === 'string') out.add(c.asset_id);
  }
  return [...out];
}
