import { STATUS_CODES } from 'node:http';
import { type Duplex, Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { redactKeys } from '../redact.js';
import { ApiError } from './errors.js';

/**
 * Answers written straight to a socket, for requests the router never sees: HTTP the parser could
 * not read (Node's clientError), a request-target or Host that is not a URL, a WebSocket handshake's
 * refusal. Always the contract's JSON (docs/API.md §6), or Polymarket's `{"error"}` under `/v1/clob/`
 * (docs/TIME-MACHINE.md §2), with `Connection: close`: after a framing error the byte stream cannot be
 * trusted to hold another request.
 */
export function writeRawError(socket: Duplex, error: ApiError, target = ''): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(isClobTarget(target) ? { error: error.message } : error.body());
  const head = [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(error.headers).map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}

/** A target under Polymarket's compatible base, however the client spelled it (`//v1/clob`, `/V1/CLOB`). */
export function isClobTarget(target: string): boolean {
  return /^\/+v1\/+clob(\/|$)/i.test(target);
}

/** A target under Kalshi's REST twin, however the client spelled it (`//v1/kalshi`, `/V1/KALSHI`). */
export function isKalshiTarget(target: string): boolean {
  return /^\/+v1\/+kalshi(\/|$)/i.test(target);
}

/** A request the server could not read as HTTP (message: what was wrong), or whose target is not a URL. */
export function badRequest(why: string): ApiError {
  return new ApiError('bad_request', `The request could not be read: ${redactKeys(why)}.`);
}

/**
 * The app's answer as a plain HTTP/1.1 response on the raw socket, which then closes: a refused
 * handshake, or any request to another path that carried an Upgrade header (e.g. curl's `h2c`). The
 * body is streamed, so an export asked for that way is not held in memory; a client gone cancels
 * it. A HEAD answer carries the headers only (RFC 9110 §9.3.2).
 */
export function writeRawResponse(socket: Duplex, response: Response, head = false): void {
  const lines = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`];
  response.headers.forEach((value, name) => {
    if (name !== 'connection' && name !== 'transfer-encoding') lines.push(`${name}: ${value}`);
  });
  lines.push('Connection: close');
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  if (!response.body || head) {
    void response.body?.cancel();
    socket.end();
    return;
  }
  const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
  socket.once('close', () => body.destroy());
  body.on('error', () => socket.destroy());
  body.pipe(socket);
}
