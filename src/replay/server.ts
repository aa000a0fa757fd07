import type { IncomingMessage } from 'node:http';
import { STATUS_CODES } from 'node:http';
import { Readable, type Duplex } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { WebSocketServer } from 'ws';
import type { Engine } from '../clickhouse/engine.js';
import { log } from '../log.js';
import { metrics } from '../metrics.js';
import type { BookReader } from '../queries/book-reader.js';
import { ReplaySession, type ReplayParams } from './session.js';

const eventsSent = metrics.counter('tickhouse_replay_events_total', 'Stored events sent by replay WebSockets');
/** Open replays of every ReplayServer of the process (one per app). */
let open = 0;
metrics.gauge('tickhouse_replay_open', 'Replay WebSockets open', () => open);

/** The app's fetch (Hono), called with @hono/node-server's env. */
type AppFetch = (request: Request, env: { incoming: IncomingMessage; outgoing: undefined }) => Response | Promise<Response>;

/** A handshake the HTTP app accepted: the replay's parameters and the headers its 101 carries. */
interface Accepted {
  params: ReplayParams;
  requestId: string;
}

/**
 * The replay WebSocket on the API's own port. Node hands upgrade requests to the 'upgrade' event,
 * not to the app; `listen` runs each one through the app first (`fetch`), so validation, auth,
 * the plan window and the daily count are the app's own middleware and route, and their errors the
 * app's responses. The route calls `accept` for a good handshake; only then does the socket switch
 * protocols, with the app's headers (X-Request-Id, X-RateLimit-*) on the 101.
 */
export class ReplayServer {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 });
  private readonly handshakes = new WeakMap<Request, Accepted | null>();

  constructor(private readonly deps: { engine: Engine; books: BookReader; fetch: AppFetch }) {}

  /** Takes the WebSocket handshakes of `server` (the API's own HTTP server). */
  listen(server: { on(event: 'upgrade', listener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void): unknown }): void {
    server.on('upgrade', (req, socket, head) => void this.handleUpgrade(req, socket, head));
  }

  /** For the route: true when `request` is a WebSocket handshake this server will complete. */
  accept(request: Request, accepted: Accepted): boolean {
    if (!this.handshakes.has(request)) return false;
    this.handshakes.set(request, accepted);
    return true;
  }

  private async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const request = toRequest(req);
    this.handshakes.set(request, null);
    let response: Response;
    try {
      // The env @hono/node-server gives a request, so getConnInfo works as for any other.
      response = await this.deps.fetch(request, { incoming: req, outgoing: undefined });
    } catch (err) {
      log.error('replay handshake failed', { error: (err as Error).stack ?? String(err) });
      socket.destroy();
      return;
    }
    const accepted = this.handshakes.get(request);
    if (!accepted) return writeResponse(socket, response);
    const headers: string[] = [];
    response.headers.forEach((value, name) => {
      if (name !== 'content-type' && name !== 'content-length') headers.push(`${name}: ${value}`);
    });
    const addHeaders = (lines: string[], r: IncomingMessage) => {
      if (r === req) lines.push(...headers);
    };
    this.wss.on('headers', addHeaders);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const session = new ReplaySession(ws, accepted.params, {
        engine: this.deps.engine,
        books: this.deps.books,
        requestId: accepted.requestId,
        onEvents: (n) => eventsSent.inc({}, n),
      });
      open++;
      void session.run().finally(() => open--);
    });
    // handleUpgrade emits 'headers' synchronously or not at all (a bad handshake it refuses itself).
    this.wss.off('headers', addHeaders);
  }

  /** Closes every replay (shutdown): 1001, the code for a server going away. */
  close(): void {
    for (const ws of this.wss.clients) ws.close(1001, 'server shutting down');
  }
}

function toRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  return new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`), { method: req.method, headers });
}

/**
 * The app's answer as a plain HTTP/1.1 response on the raw socket, which then closes: a refusal, or
 * any request to another path that carried an Upgrade header (e.g. curl's `h2c`). The body is
 * streamed, so an export asked for that way is not held in memory; a client gone cancels it.
 */
function writeResponse(socket: Duplex, response: Response): void {
  const lines = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`];
  response.headers.forEach((value, name) => {
    if (name !== 'connection' && name !== 'transfer-encoding') lines.push(`${name}: ${value}`);
  });
  lines.push('Connection: close');
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  if (!response.body) {
    socket.end();
    return;
  }
  const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
  socket.once('close', () => body.destroy());
  body.pipe(socket);
}
