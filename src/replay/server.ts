import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { BookReader } from '../book-history/port.js';
import type { Engine } from '../clickhouse/engine.js';
import { ApiError } from '../http/errors.js';
import { type AppFetch, internalError, type UpgradeHandler, upgradeRequest } from '../http/http-server.js';
import { writeRawError, writeRawResponse } from '../http/raw-response.js';
import { currentRequestScope, runInRequestScope } from '../http/request-scope.js';
import { errorText, log } from '../log.js';
import { metrics } from '../metrics.js';
import { type ReplayParams, ReplaySession } from './session.js';

const eventsSent = metrics.counter('tickhouse_replay_events_total', 'Stored events sent by replay WebSockets');
/** Open replays of every ReplayServer of the process (one per app). */
const sessions = new Set<ReplaySession>();
metrics.gauge('tickhouse_replay_open', 'Replay WebSockets open', () => sessions.size);
metrics.gauge(
  'tickhouse_replay_paused',
  'Replay WebSockets whose client is behind: nothing more is read from the store or from the client until it catches up',
  () => {
    let n = 0;
    for (const s of sessions) if (s.paused) n++;
    return n;
  },
);
metrics.gauge(
  'tickhouse_replay_unsent_bytes',
  'Bytes replay WebSockets hold for clients that have not taken them yet (each at most about 1 MiB plus one message)',
  () => {
    let n = 0;
    for (const s of sessions) n += s.unsentBytes;
    return n;
  },
);

/** A handshake the HTTP app accepted: the replay's parameters and the headers its 101 carries. */
interface Accepted {
  params: ReplayParams;
  requestId: string;
  /** The account's slot for a heavy request (src/auth/heavy-requests.ts): held until the connection ends. */
  lease?: { release(): void };
}

/**
 * The replay WebSocket on the API's own port. Node hands upgrade requests to the 'upgrade' event,
 * not to the app; `upgrade` runs each one through the app first (`fetch`), so validation, auth,
 * the plan window and the daily count are the app's own middleware and route, and their errors the
 * app's responses. The route calls `accept` for a good handshake; only then does the socket switch
 * protocols, with the app's headers (X-Request-Id, X-RateLimit-*) on the 101.
 */
export class ReplayServer implements UpgradeHandler {
  // allowSynchronousEvents false: one client message per turn of the event loop. A client speaks a
  // few subscriptions and a PING every few seconds, so nothing is lost; a flood of messages in one
  // read (64 KB of PINGs is 6,500 of them, and libuv reads up to 32 times a turn) then waits its
  // turn beside every other request instead of holding the loop for a second, and the unread rest
  // pushes back on the client's socket (ws stops reading while a message waits).
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20, allowSynchronousEvents: false });
  private readonly handshakes = new WeakMap<Request, Accepted | null>();

  constructor(private readonly deps: { engine: Engine; books: BookReader; fetch: AppFetch }) {
    // A handshake ws itself refuses (a method other than GET, no valid Sec-WebSocket-Key or -Version,
    // a malformed Sec-WebSocket-Protocol): the refusal in the contract's shape, not ws's own HTML.
    this.wss.on('wsClientError', (err: Error, socket: Duplex, req: IncomingMessage) =>
      writeRawError(socket, new ApiError('bad_request', `Not a WebSocket handshake: ${err.message}.`), req.url),
    );
  }

  /** For the route: true when `request` is a WebSocket handshake this server will complete. */
  accept(request: Request, accepted: Accepted): boolean {
    if (!this.handshakes.has(request)) return false;
    this.handshakes.set(request, accepted);
    return true;
  }

  /** A request that asked to switch protocols (any path): answered whatever happens, never thrown. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const scope = { fail: () => writeRawError(socket, internalError(scope.requestId), req.url) } as { requestId?: string; fail(): void };
    runInRequestScope(scope, () => {
      this.handshake(req, socket, head).catch((err: unknown) => {
        log.error('replay handshake failed', { request_id: currentRequestScope()?.requestId, error: errorText(err, 'stack') });
        scope.fail();
      });
    });
  }

  private async handshake(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    let request: Request;
    try {
      request = upgradeRequest(req);
    } catch (err) {
      if (err instanceof ApiError) return writeRawError(socket, err, req.url);
      throw err;
    }
    this.handshakes.set(request, null);
    // The env @hono/node-server gives a request, so getConnInfo works as for any other.
    const response = await this.deps.fetch(request, { incoming: req, outgoing: undefined });
    const accepted = this.handshakes.get(request);
    if (!accepted) return writeRawResponse(socket, response, req.method === 'HEAD');
    // However the connection ends (the replay over, the client gone, a handshake ws refused).
    if (accepted.lease) socket.once('close', accepted.lease.release);
    if (socket.destroyed) accepted.lease?.release();
    const headers: string[] = [];
    response.headers.forEach((value, name) => {
      if (name !== 'content-type' && name !== 'content-length') headers.push(`${name}: ${value}`);
    });
    const addHeaders = (lines: string[], r: IncomingMessage) => {
      if (r === req) lines.push(...headers);
    };
    this.wss.on('headers', addHeaders);
    try {
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        const session = new ReplaySession(ws, accepted.params, {
          engine: this.deps.engine,
          books: this.deps.books,
          requestId: accepted.requestId,
          onEvents: (n) => eventsSent.inc({}, n),
        });
        sessions.add(session);
        void session.run().finally(() => sessions.delete(session));
      });
    } finally {
      // handleUpgrade emits 'headers' synchronously or not at all (a bad handshake it refuses itself).
      this.wss.off('headers', addHeaders);
    }
  }

  /** Closes every replay (shutdown): 1001, the code for a server going away. */
  close(): void {
    for (const ws of this.wss.clients) ws.close(1001, 'server shutting down');
  }
}
