import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { getRequestListener } from '@hono/node-server';
import { redactPath } from '../redact.js';
import { ApiError } from './errors.js';
import { badRequest, isClobTarget, isKalshiTarget, writeRawError } from './raw-response.js';
import { currentRequestScope, runInRequestScope } from './request-scope.js';

/** The app's fetch (Hono), as @hono/node-server calls it. */
export type AppFetch = (request: Request, env: { incoming: IncomingMessage; outgoing: ServerResponse | undefined }) => Response | Promise<Response>;

/** Takes the connections that ask to switch protocols (the replay WebSocket server). */
export interface UpgradeHandler {
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/**
 * The service's front door: every byte a client sends meets one of these, and each answers in the
 * contract's shape, never by dropping the connection or the process.
 *   - A request @hono/node-server can turn into a fetch Request goes to the app. One it cannot (a
 *     request-target or Host that is not a URL) gets 400 `bad_request` (its errorHandler).
 *   - HTTP the parser cannot read gets 400 `bad_request`, oversized headers 431 `header_too_large`
 *     (header lines over 16 KiB, or a request line and headers over 64 KiB),
 *     a request not complete within `requestTimeout` 408 `request_timeout` (clientError).
 *   - `Connection: Upgrade` goes to `upgrades` (the replay), which builds its Request with
 *     upgradeRequest below and answers every other path with the app's own response.
 * Each request runs in a request scope (request-scope.ts), so an error nobody caught is answered.
 */
export function createHttpServer(fetch: AppFetch, upgrades?: UpgradeHandler): Server {
  // The app takes the HTTP/1.1 bindings this server gives (no HTTP/2 here).
  const toApp = getRequestListener(fetch as Parameters<typeof getRequestListener>[0], {
    // Called when node-server cannot build the Request (RequestError), or the app throws outside Hono.
    errorHandler: (err) => {
      const scope = currentRequestScope();
      const error = err instanceof Error && err.name === 'RequestError' ? badRequest(err.message.toLowerCase()) : internalError(scope?.requestId);
      const body = scope?.clob ? { error: error.message } : error.body();
      return new Response(JSON.stringify(body), { status: error.status, headers: { 'Content-Type': 'application/json', Connection: 'close' } });
    },
  });
  // Without a Host the request still reaches the app's error handler (400 bad_request, as JSON);
  // Node's own refusal has no body.
  const server = createServer({ requireHostHeader: false, maxHeaderSize: MAX_HEAD_BYTES }, (incoming, outgoing) => {
    answering(incoming.socket, outgoing);
    // Node keeps the first of several Host lines: which host was meant cannot be known (RFC 9112 §3.2: 400).
    if (hostLines(incoming) > 1) return answerAndClose(outgoing, TWO_HOSTS(), incoming.url);
    if (headerBytes(incoming) > MAX_HEADER_BYTES) return answerAndClose(outgoing, HEADERS_TOO_LARGE(), incoming.url);
    const scope = { clob: isClobTarget(incoming.url ?? ''), kalshi: isKalshiTarget(incoming.url ?? ''), fail: () => failResponse(outgoing) };
    runInRequestScope(scope, () => void toApp(incoming, outgoing));
  });
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
    if (err.code === 'ECONNRESET') return socket.destroy();
    const error =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError('header_too_large', 'The request line and headers are larger than 64 KiB (the headers alone may take 16 KiB).')
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? new ApiError('request_timeout', 'The request was not received in time.')
          : badRequest(`malformed HTTP (${err.code ?? 'parse error'})`);
    const pending = unanswered.get(socket)?.find((res) => !res.req.complete);
    if (pending) {
      // The body of the request being answered is what failed (a broken chunk): its answer is this
      // error, while its handler may still wait for the rest of the body.
      if (pending.headersSent) return socket.destroy();
      const body = JSON.stringify(isClobTarget(pending.req.url ?? '') ? { error: error.message } : error.body());
      pending.writeHead(error.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
      pending.end(body, () => socket.destroy());
      return;
    }
    // The request line, when the parser got that far: a path under /v1/clob/ takes Polymarket's shape.
    const target = /^[A-Z]+ (\S+)/.exec(err.rawPacket?.subarray(0, 8192).toString('latin1') ?? '')?.[1] ?? '';
    afterPendingResponse(socket, () => writeRawError(socket, error, target));
  });
  // `Expect: 100-continue` is met by Node; any other expectation gets its 417 in the contract's shape.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    answerAndClose(res, new ApiError('expectation_failed', `Expect: ${String(req.headers.expect).slice(0, 64)} cannot be met; only 100-continue is.`), req.url);
  });
  // CONNECT (a proxy's method): nothing here serves it.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    writeRawError(socket, new ApiError('not_found', `Not found: CONNECT ${redactPath(String(req.url)).slice(0, 200)}`), req.url);
  });
  if (upgrades) {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => afterPendingResponse(socket, () => upgrades.upgrade(req, socket, head)));
  }
  return server;
}

/** An error answered before the app, in the shape of the target's base, on a connection that then closes. */
function answerAndClose(res: ServerResponse, error: ApiError, target: string | undefined): void {
  const body = JSON.stringify(isClobTarget(target ?? '') ? { error: error.message } : error.body());
  res.writeHead(error.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
  res.end(body);
}

/**
 * What a request's head may hold. The parser takes 64 KiB of request line and headers together, so a
 * long query fits (a Tardis replay slice names up to 500 assets of 77 digits in its URL: ~43 KB, issue
 * 35); the header lines alone are held to 16 KiB, as before (431).
 */
const MAX_HEAD_BYTES = 64 * 1024;
const MAX_HEADER_BYTES = 16 * 1024;
const HEADERS_TOO_LARGE = () => new ApiError('header_too_large', 'The request headers are larger than 16 KiB.');

/** The header lines as sent: each name, `: `, value and CRLF. */
function headerBytes(req: IncomingMessage): number {
  let n = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) n += req.rawHeaders[i].length + req.rawHeaders[i + 1].length + 4;
  return n;
}

const TWO_HOSTS = () => badRequest('the request has more than one Host header (RFC 9112 §3.2)');

function hostLines(req: IncomingMessage): number {
  let n = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].length === 4 && req.rawHeaders[i].toLowerCase() === 'host') n++;
  return n;
}

/** The responses each connection still owes, in request order (pipelined requests queue up). */
const unanswered = new WeakMap<Duplex, ServerResponse[]>();

function answering(socket: Duplex, res: ServerResponse): void {
  const owed = unanswered.get(socket) ?? [];
  unanswered.set(socket, owed);
  owed.push(res);
  res.once('close', () => owed.splice(owed.indexOf(res), 1));
}

/**
 * Runs `then` once every response this connection owes (earlier requests of a pipelined batch) has
 * gone out: an error or an upgrade answer written at once would cut in front of them.
 */
function afterPendingResponse(socket: Duplex, then: () => void): void {
  const owed = unanswered.get(socket);
  if (!owed?.length) return then();
  const last = owed[owed.length - 1];
  last.once('close', () => (last.writableFinished ? afterPendingResponse(socket, then) : socket.destroy()));
}

/** A 500 for a request whose handler failed where nothing caught it (the process guard calls it). */
function failResponse(outgoing: ServerResponse): void {
  if (outgoing.headersSent) {
    outgoing.destroy();
    return;
  }
  const error = internalError(currentRequestScope()?.requestId);
  const body = JSON.stringify(currentRequestScope()?.clob ? { error: error.message } : error.body());
  outgoing.writeHead(error.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
  outgoing.end(body);
}

export function internalError(requestId: string | undefined): ApiError {
  return new ApiError('internal_error', 'Internal error; quote request_id when reporting it.', { request_id: requestId ?? null });
}

/**
 * A WebSocket handshake as a fetch Request, by the rules @hono/node-server applies to every other
 * request: an absolute http(s) target as it is, else a path (`/…`, no backslash before the query)
 * on the Host, which must be a host (and port) and nothing else. Throws 400 `bad_request` otherwise.
 */
export function upgradeRequest(req: IncomingMessage): Request {
  const target = req.url ?? '';
  // Methods a fetch Request cannot carry (CONNECT, TRACE, TRACK): nothing here serves them.
  if (/^(CONNECT|TRACE|TRACK)$/i.test(req.method ?? '')) throw new ApiError('not_found', `Not found: ${req.method} ${redactPath(target).slice(0, 200)}`);
  if (hostLines(req) > 1) throw TWO_HOSTS();
  if (headerBytes(req) > MAX_HEADER_BYTES) throw HEADERS_TOO_LARGE();
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    try {
      headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
    } catch {
      throw badRequest(`header ${JSON.stringify(req.rawHeaders[i].slice(0, 64))} is not valid`);
    }
  }
  return new Request(upgradeUrl(target, req.headers.host), { method: req.method, headers });
}

function upgradeUrl(target: string, host: string | undefined): string {
  const query = target.indexOf('?');
  const backslash = target.indexOf('\\');
  if (backslash >= 0 && (query < 0 || backslash < query)) throw badRequest('the request-target has a backslash in its path');
  if (/^https?:\/\//i.test(target)) {
    try {
      return new URL(target).href;
    } catch {
      throw badRequest('the request-target is not a URL');
    }
  }
  if (target[0] !== '/') throw badRequest('the request-target must be a path starting with /');
  const authority = host ?? 'localhost';
  let url: URL;
  try {
    url = new URL(`http://${authority}${target}`);
  } catch {
    throw badRequest('the Host header is not a host name');
  }
  // `Host: a/b` or `Host: a@b` would parse, as another host or path: only a plain authority is one.
  if (url.host.toLowerCase() !== authority.toLowerCase().replace(/:80$/, '')) throw badRequest('the Host header is not a host name');
  return url.href;
}
