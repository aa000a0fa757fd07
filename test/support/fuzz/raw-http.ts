import { connect } from 'node:net';

/**
 * HTTP/1.x over a bare `node:net` socket, so a case can send bytes no HTTP client would (bad targets,
 * duplicate or broken headers, malformed chunking, pipelined requests, a request cut in the middle)
 * and read back exactly what the service wrote, Node's own refusals included.
 */
export interface RawResponse {
  version: string;
  status: number;
  reason: string;
  /** Header lines as sent (name, value), names lower-cased. */
  headers: [string, string][];
  /** The body (de-chunked), possibly cut at the read cap. */
  body: Buffer;
  /** The body was cut (the cap, or the case stopped reading a long stream). */
  truncated: boolean;
}

export function header(res: RawResponse, name: string): string | undefined {
  return res.headers.find(([n]) => n === name)?.[1];
}

/** One piece of what the client sends: bytes, or a pause before the next piece (slow clients). */
export type Piece = string | Buffer | { pauseMs: number };

export interface ExchangeOptions {
  /** Methods of the requests sent, in order: a HEAD response has no body, a 101 ends HTTP. */
  methods: string[];
  /** The whole exchange must be over by then (else `timedOut`). */
  timeoutMs: number;
  /** Body bytes kept per response; past it the response counts as read and the connection is closed. */
  maxBody?: number;
  /** A 2xx body still streaming after this many ms is cut (long exports are legitimate). */
  streamMs?: number;
  /**
   * Resolve as soon as every piece is sent, leaving the connection open (a request left incomplete on
   * purpose): answers that still come are added to `responses` until the caller calls `close()`.
   */
  holdAfterSend?: boolean;
}

export interface Exchange {
  responses: RawResponse[];
  /** The server closed (FIN or RST) before every expected response had come. */
  closedEarly: boolean;
  /** The exchange did not finish in `timeoutMs`: no or incomplete answer. */
  timedOut: boolean;
  /** Bytes received that are not a parsable HTTP response (protocol garbage). */
  garbage: string | null;
  error: string | null;
  /** From the first byte sent to the end of the last response (or the timeout). */
  ms: number;
  /** Closes the connection (a held one; a no-op once it is closed). */
  close(): void;
}

export function exchange(port: number, pieces: Piece[], options: ExchangeOptions): Promise<Exchange> {
  const maxBody = options.maxBody ?? 256 * 1024;
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', noDelay: true });
    const responses: RawResponse[] = [];
    let buffer: Buffer = Buffer.alloc(0);
    let current: { res: RawResponse; mode: 'length' | 'chunked' | 'close' | 'none'; remaining: number; chunkState: ChunkState; firstBodyAt: number } | null =
      null;
    let done = false;
    let garbage: string | null = null;
    let error: string | null = null;
    let closedEarly = false;
    let timedOut = false;

    const result = (): Exchange => ({ responses, closedEarly, timedOut, garbage, error, ms: performance.now() - started, close: () => socket.destroy() });
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(streamCheck);
      socket.destroy();
      resolve(result());
    };
    const timer = setTimeout(() => {
      timedOut = true;
      if (current) finishResponse(true);
      finish();
    }, options.timeoutMs);
    // A 2xx stream longer than `streamMs` is legitimate (a long export): it is cut, not a failure.
    const streamCheck = setInterval(() => {
      if (current && options.streamMs !== undefined && current.res.status < 300 && performance.now() - current.firstBodyAt > options.streamMs) {
        finishResponse(true);
        socket.destroy();
        finish();
      }
    }, 20);

    const finishResponse = (truncated: boolean) => {
      if (!current) return;
      current.res.truncated ||= truncated;
      responses.push(current.res);
      current = null;
      if (responses.length >= options.methods.length) finish();
    };

    const parse = () => {
      for (;;) {
        if (done) return;
        if (!current) {
          if (!buffer.length) return;
          const end = buffer.indexOf('\r\n\r\n');
          if (end < 0) {
            if (buffer.length > 64 * 1024 || !'HTTP/'.startsWith(buffer.subarray(0, 5).toString('latin1'))) {
              garbage = buffer.subarray(0, 200).toString('latin1');
              finish();
            }
            return;
          }
          const head = buffer.subarray(0, end).toString('latin1').split('\r\n');
          buffer = buffer.subarray(end + 4);
          const m = /^(HTTP\/\d\.\d) (\d{3})(?: (.*))?$/.exec(head[0]);
          if (!m) {
            garbage = head[0].slice(0, 200);
            return finish();
          }
          const headers = head.slice(1).map((line): [string, string] => {
            const colon = line.indexOf(':');
            return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
          });
          const res: RawResponse = { version: m[1], status: Number(m[2]), reason: m[3] ?? '', headers, body: Buffer.alloc(0), truncated: false };
          const method = options.methods[responses.length] ?? 'GET';
          if (res.status === 100) continue; // an interim answer: the real one follows
          const te = header(res, 'transfer-encoding');
          const cl = header(res, 'content-length');
          const mode =
            method === 'HEAD' || res.status === 101 || res.status === 204 || res.status === 304
              ? 'none'
              : te && /chunked/i.test(te)
                ? 'chunked'
                : cl !== undefined
                  ? 'length'
                  : 'close';
          current = { res, mode, remaining: mode === 'length' ? Number(cl) : 0, chunkState: { size: -1 }, firstBodyAt: performance.now() };
          if (mode === 'none') {
            const upgraded = res.status === 101;
            finishResponse(false);
            // After a 101 the bytes are the new protocol's, not HTTP.
            if (upgraded) return finish();
            continue;
          }
        }
        const c = current!;
        if (c.mode === 'length') {
          const take = Math.min(c.remaining, buffer.length);
          append(c.res, buffer.subarray(0, take), maxBody);
          buffer = buffer.subarray(take);
          c.remaining -= take;
          if (c.remaining === 0) {
            finishResponse(false);
            continue;
          }
          if (c.res.body.length >= maxBody) return cut();
          return;
        }
        if (c.mode === 'close') {
          append(c.res, buffer, maxBody);
          buffer = Buffer.alloc(0);
          if (c.res.body.length >= maxBody) return cut();
          return;
        }
        // chunked
        const r = readChunks(c.chunkState, buffer);
        if (r.error) {
          garbage = `bad chunked encoding: ${r.error}`;
          return finish();
        }
        append(c.res, r.data, maxBody);
        buffer = r.rest;
        if (r.ended) {
          finishResponse(false);
          continue;
        }
        if (c.res.body.length >= maxBody) return cut();
        return;
      }
    };
    const cut = () => {
      finishResponse(true);
      socket.destroy();
      finish();
    };

    socket.on('data', (data: Buffer) => {
      buffer = buffer.length ? Buffer.concat([buffer, data]) : data;
      parse();
    });
    socket.on('error', (err) => {
      error ||= (err as NodeJS.ErrnoException).code ?? err.message;
    });
    socket.on('close', () => {
      if (done) return;
      if (current?.mode === 'close') finishResponse(false);
      else if (current) finishResponse(true);
      if (!done) {
        closedEarly = responses.length < options.methods.length;
        finish();
      }
    });
    socket.once('connect', async () => {
      for (const piece of pieces) {
        if (done || socket.destroyed) return;
        if (typeof piece === 'object' && !Buffer.isBuffer(piece)) {
          await new Promise((r) => setTimeout(r, piece.pauseMs));
          continue;
        }
        const ok = socket.write(piece);
        if (!ok) await new Promise<void>((r) => socket.once('drain', () => r()).once('close', () => r()));
      }
      // No half-close (FIN) after the request: the service, like most, takes a client's EOF for a
      // client gone and cancels the request (Go's net/http does the same). The socket closes once
      // the answers are read.
      if (options.holdAfterSend && !done) {
        // Answers keep being parsed into `responses` (finish() now only stops the timers).
        clearTimeout(timer);
        resolve(result());
      }
    });
  });
}

function append(res: RawResponse, data: Buffer, maxBody: number) {
  if (res.body.length >= maxBody || !data.length) return;
  res.body = Buffer.concat([res.body, data.subarray(0, maxBody - res.body.length)]);
}

interface ChunkState {
  /** Bytes left of the chunk being read; -1 while a size line is expected, -2 after the last chunk (trailers). */
  size: number;
}

function readChunks(state: ChunkState, input: Buffer): { data: Buffer; rest: Buffer; ended: boolean; error?: string } {
  const parts: Buffer[] = [];
  let buf = input;
  for (;;) {
    if (state.size === -2) {
      // Trailers until an empty line.
      const end = buf.indexOf('\r\n');
      if (end < 0) return { data: Buffer.concat(parts), rest: buf, ended: false };
      const line = buf.subarray(0, end);
      buf = buf.subarray(end + 2);
      if (!line.length) return { data: Buffer.concat(parts), rest: buf, ended: true };
      continue;
    }
    if (state.size === -1) {
      const end = buf.indexOf('\r\n');
      if (end < 0) return { data: Buffer.concat(parts), rest: buf, ended: false };
      const line = buf.subarray(0, end).toString('latin1').split(';')[0].trim();
      if (!/^[0-9a-f]+$/i.test(line)) return { data: Buffer.concat(parts), rest: buf, ended: false, error: `size line ${JSON.stringify(line.slice(0, 40))}` };
      buf = buf.subarray(end + 2);
      const size = parseInt(line, 16);
      state.size = size === 0 ? -2 : size;
      continue;
    }
    // Chunk data plus its CRLF.
    if (buf.length < state.size + 2) {
      // Take what is there, keep the state.
      const take = Math.min(buf.length, state.size);
      parts.push(buf.subarray(0, take));
      state.size -= take;
      buf = buf.subarray(take);
      if (state.size > 0) return { data: Buffer.concat(parts), rest: buf, ended: false };
      if (buf.length < 2) return { data: Buffer.concat(parts), rest: buf, ended: false };
    } else {
      parts.push(buf.subarray(0, state.size));
      buf = buf.subarray(state.size);
      state.size = 0;
    }
    if (buf.subarray(0, 2).toString('latin1') !== '\r\n') return { data: Buffer.concat(parts), rest: buf, ended: false, error: 'chunk not followed by CRLF' };
    buf = buf.subarray(2);
    state.size = -1;
  }
}

/** GET /healthz on a fresh connection: its latency in ms, or null when no `200 {"status":"ok"}` came in `timeoutMs`. */
export async function healthz(port: number, timeoutMs: number): Promise<{ ms: number; ok: boolean; why: string }> {
  const r = await exchange(port, ['GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'], { methods: ['GET'], timeoutMs });
  const res = r.responses[0];
  const ok = !!res && !res.truncated && res.status === 200 && res.body.toString() === '{"status":"ok"}';
  const why = ok
    ? 'ok'
    : r.timedOut
      ? `no answer in ${timeoutMs} ms`
      : res
        ? `${res.status} ${res.body.toString().slice(0, 100)}`
        : `closed (${r.error ?? 'no bytes'})`;
  return { ms: r.ms, ok, why };
}
