import { constants, type KeyObject, verify } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

/**
 * A local stand-in for Kalshi's market data, speaking its published protocol (docs.kalshi.com; the shapes
 * in test/fixtures/kalshi/, PROVENANCE.md): REST `GET /trade-api/v2/markets` (cursor pages, `status`,
 * `tickers`) and the WebSocket `/trade-api/ws/v2`. Every request and the handshake must carry
 * KALSHI-ACCESS-KEY / -SIGNATURE / -TIMESTAMP, an RSA-PSS SHA-256 signature of `timestamp + method + path`
 * checked with the public key; otherwise REST answers 401 and the upgrade is refused with 401.
 *
 * Commands: `subscribe` (`channels`, `market_ticker` | `market_tickers`) answers one `subscribed`
 * (`{id, type, msg: {channel, sid}}`) per channel, then for `orderbook_delta` one `orderbook_snapshot` per
 * market (the server's current ladders), each message of the subscription with the next `seq`;
 * `unsubscribe` (`params.sids`) answers `unsubscribed`. The test drives the book with `delta()` (sent
 * to the orderbook subscription holding the market, and applied to the server's ladders so a later
 * snapshot states it) and `trade()`; `loseNextDelta()` loses a delta (its seq taken, the message never
 * sent), so the next one shows a seq gap.
 */
export interface KalshiMarketJson {
  ticker: string;
  event_ticker: string;
  title: string;
  yes_sub_title: string;
  status: string;
  [k: string]: unknown;
}

export interface KalshiServer {
  restUrl: string;
  wsUrl: string;
  /** Every message the WebSocket sent, in order (what the recorder was told). */
  sent: string[];
  /** Commands received, parsed. */
  commands: Record<string, any>[];
  requests: string[];
  /** Requests and handshakes refused for a missing or bad signature. */
  refusals: number;
  setMarkets(markets: KalshiMarketJson[]): void;
  /** The ladders the next snapshot of `ticker` states: [price_dollars, count_fp] pairs. */
  setBook(ticker: string, yes: [string, string][], no: [string, string][]): void;
  /** Sends an orderbook_delta for the market; false when no open subscription holds it. */
  delta(ticker: string, side: 'yes' | 'no', priceDollars: string, deltaFp: string, tsMs: number): boolean;
  trade(msg: Record<string, unknown>): boolean;
  /** The next delta() of `ticker` is lost: applied to the server's ladders, its seq taken, never sent. */
  loseNextDelta(ticker: string): void;
  /** Checks signatures against another key from now on (the client's key no longer matches). */
  setPublicKey(key: KeyObject): void;
  /** Markets of live orderbook subscriptions. */
  subscribed(): Set<string>;
  dropAll(): void;
  close(): Promise<void>;
}

interface Sub {
  sid: number;
  channel: string;
  tickers: string[];
  seq: number;
  ws: WebSocket;
}

/** Fixed-point units: price in 1/10,000, count in 1/100. */
const units = (s: string, decimals: number) => {
  const [i, f = ''] = s.replace('-', '').split('.');
  const v = Number(i) * 10 ** decimals + Number(f.padEnd(decimals, '0'));
  return s.startsWith('-') ? -v : v;
};
const text = (v: number, decimals: number) => (v / 10 ** decimals).toFixed(decimals);

export async function startKalshiServer(key: KeyObject, pageSize = 2): Promise<KalshiServer> {
  let publicKey = key;
  let markets: KalshiMarketJson[] = [];
  /** ticker → side → price units → count units. */
  const books = new Map<string, { yes: Map<number, number>; no: Map<number, number> }>();
  const subs: Sub[] = [];
  const sockets = new Set<WebSocket>();
  const lose = new Set<string>();
  let nextSid = 1;
  const server: KalshiServer = {
    restUrl: '',
    wsUrl: '',
    sent: [],
    commands: [],
    requests: [],
    refusals: 0,
    setMarkets: (m) => {
      markets = m;
    },
    setBook(ticker, yes, no) {
      books.set(ticker, {
        yes: new Map(yes.map(([p, c]) => [units(p, 4), units(c, 2)])),
        no: new Map(no.map(([p, c]) => [units(p, 4), units(c, 2)])),
      });
    },
    delta(ticker, side, priceDollars, deltaFp, tsMs) {
      const book = books.get(ticker) ?? { yes: new Map(), no: new Map() };
      books.set(ticker, book);
      const ladder = book[side];
      const p = units(priceDollars, 4);
      const size = (ladder.get(p) ?? 0) + units(deltaFp, 2);
      if (size > 0) ladder.set(p, size);
      else ladder.delete(p);
      const sub = subs.find((s) => s.channel === 'orderbook_delta' && s.tickers.includes(ticker));
      if (!sub) return false;
      if (lose.delete(ticker)) {
        sub.seq++;
        return true;
      }
      send(sub, 'orderbook_delta', { market_ticker: ticker, market_id: marketId(ticker), price_dollars: priceDollars, delta_fp: deltaFp, side, ts_ms: tsMs });
      return true;
    },
    trade(msg) {
      const sub = subs.find((s) => s.channel === 'trade' && s.tickers.includes(String(msg.market_ticker)));
      if (!sub) return false;
      // As the AsyncAPI example: a trade message carries no seq.
      sendText(sub.ws, JSON.stringify({ type: 'trade', sid: sub.sid, msg }));
      return true;
    },
    loseNextDelta(ticker) {
      lose.add(ticker);
    },
    setPublicKey(key) {
      publicKey = key;
    },
    subscribed: () => new Set(subs.filter((s) => s.channel === 'orderbook_delta').flatMap((s) => s.tickers)),
    dropAll: () => sockets.forEach((ws) => ws.terminate()),
    close: async () => {
      sockets.forEach((ws) => ws.terminate());
      wss.close();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };

  function sendText(ws: WebSocket, message: string) {
    server.sent.push(message);
    ws.send(message);
  }

  function send(sub: Sub, type: string, msg: Record<string, unknown>) {
    sendText(sub.ws, JSON.stringify({ type, sid: sub.sid, seq: ++sub.seq, msg }));
  }

  function snapshot(sub: Sub, ticker: string) {
    const book = books.get(ticker);
    const msg: Record<string, unknown> = { market_ticker: ticker, market_id: marketId(ticker) };
    // Kalshi leaves a side's key out when it has no levels.
    const side = (ladder: Map<number, number>) => [...ladder].sort((a, b) => a[0] - b[0]).map(([p, c]) => [text(p, 4), text(c, 2)]);
    if (book?.yes.size) msg.yes_dollars_fp = side(book.yes);
    if (book?.no.size) msg.no_dollars_fp = side(book.no);
    send(sub, 'orderbook_snapshot', msg);
  }

  function onCommand(ws: WebSocket, command: Record<string, any>) {
    server.commands.push(command);
    const { id, cmd, params } = command;
    if (cmd === 'subscribe') subscribe(ws, id, params);
    else if (cmd === 'unsubscribe') unsubscribe(ws, id, params.sids);
    else sendText(ws, JSON.stringify({ id, type: 'error', msg: { code: 5, msg: 'Unknown command' } }));
  }

  function subscribe(ws: WebSocket, id: number, params: { channels: string[]; market_tickers?: string[]; market_ticker?: string }) {
    const tickers = params.market_tickers ?? (params.market_ticker ? [params.market_ticker] : []);
    for (const channel of params.channels) {
      const sub: Sub = { sid: nextSid++, channel, tickers, seq: 0, ws };
      subs.push(sub);
      sendText(ws, JSON.stringify({ id, type: 'subscribed', msg: { channel, sid: sub.sid } }));
      if (channel === 'orderbook_delta') for (const t of tickers) snapshot(sub, t);
    }
  }

  function unsubscribe(ws: WebSocket, id: number, sids: number[]) {
    for (const sid of sids) {
      const i = subs.findIndex((s) => s.sid === sid && s.ws === ws);
      if (i < 0) continue;
      const [sub] = subs.splice(i, 1);
      sendText(ws, JSON.stringify({ id, sid, seq: sub.seq + 1, type: 'unsubscribed' }));
    }
  }

  function authorized(req: IncomingMessage, method: string, path: string): boolean {
    const key = req.headers['kalshi-access-key'];
    const signature = req.headers['kalshi-access-signature'];
    const timestamp = req.headers['kalshi-access-timestamp'];
    const ok =
      typeof key === 'string' &&
      key !== '' &&
      typeof signature === 'string' &&
      typeof timestamp === 'string' &&
      /^\d{13}$/.test(timestamp) &&
      verify(
        'sha256',
        Buffer.from(timestamp + method + path),
        { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST },
        Buffer.from(signature, 'base64'),
      );
    if (!ok) server.refusals++;
    return ok;
  }

  const http = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    server.requests.push(`${req.method} ${url.pathname}${url.search}`);
    if (!authorized(req, req.method ?? 'GET', url.pathname)) {
      res
        .writeHead(401, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'authentication_error', message: 'authentication error' } }));
      return;
    }
    if (req.method !== 'GET' || url.pathname !== '/trade-api/v2/markets') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'not_found', message: 'not found' } }));
      return;
    }
    const status = url.searchParams.get('status');
    const tickers = url.searchParams.get('tickers')?.split(',');
    const listed = markets.filter((m) => (tickers ? tickers.includes(m.ticker) : status === 'open' ? m.status === 'active' : true));
    const limit = Math.min(Number(url.searchParams.get('limit') ?? 100), pageSize);
    const from = Number(url.searchParams.get('cursor') || 0);
    const page = listed.slice(from, from + limit);
    const cursor = from + limit < listed.length ? String(from + limit) : '';
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ markets: page, cursor }));
  });
  const wss = new WebSocketServer({ noServer: true });
  http.on('upgrade', (req, socket, head) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== '/trade-api/ws/v2' || !authorized(req, 'GET', path)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nauthentication error');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on('close', () => {
        sockets.delete(ws);
        for (let i = subs.length - 1; i >= 0; i--) if (subs[i].ws === ws) subs.splice(i, 1);
      });
      ws.on('message', (data) => onCommand(ws, JSON.parse(data.toString())));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  server.restUrl = `http://127.0.0.1:${port}/trade-api/v2`;
  server.wsUrl = `ws://127.0.0.1:${port}/trade-api/ws/v2`;
  return server;
}

/** A stable UUID-shaped market id per ticker (Kalshi sends `market_id` beside the ticker). */
function marketId(ticker: string): string {
  let h = 0x811c9dc5;
  for (const c of ticker) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  const hex = h.toString(16).padStart(8, '0');
  return `${hex}-${hex.slice(0, 4)}-4${hex.slice(1, 4)}-8${hex.slice(1, 4)}-${hex}${hex.slice(0, 4)}`;
}

/** A Kalshi `Market` as GET /markets lists it (the fields the recorder reads and a few more, shaped as the OpenAPI document). */
export function kalshiMarket(ticker: string, eventTicker: string, title: string): KalshiMarketJson {
  return {
    ticker,
    event_ticker: eventTicker,
    market_type: 'binary',
    title,
    yes_sub_title: title,
    no_sub_title: title,
    status: 'active',
    created_time: '2026-11-01T00:00:00Z',
    updated_time: '2026-11-01T00:00:00Z',
    open_time: '2026-11-01T00:00:00Z',
    close_time: '2026-12-31T00:00:00Z',
    yes_bid_dollars: '0.0000',
    yes_ask_dollars: '1.0000',
    volume_fp: '0.00',
    open_interest_fp: '0.00',
    price_level_structure: 'linear_cent',
    price_ranges: [{ start: '0.0000', end: '1.0000', step: '0.0100' }],
  };
}

/** A seeded PRNG (mulberry32): the same seed, the same stream. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
