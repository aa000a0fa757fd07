import type { ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import type { Context } from 'hono';
import { LoopBreaks } from '../event-loop.js';
import { log } from '../log.js';
import { metrics } from '../metrics.js';
import { redactPath } from '../redact.js';
import { acceptedEncodings } from './accept-encoding.js';

/**
 * Turns an engine byte stream into an HTTP response body, on the shortest path: each engine chunk
 * (optionally between a prefix and a suffix, e.g. a JSON envelope) is compressed in place when the
 * client asked for it and written to the Node response; the next chunk is pulled only once the
 * socket took this one ('drain'), so back-pressure reaches the engine. A client that goes away
 * destroys the engine stream (which cancels its query); a failure after the first byte destroys the
 * socket: the client sees a truncated transfer, never a short file. Without a Node response (the
 * app driven through fetch, as tests do) the same chunks are pulled through a web ReadableStream.
 */
export interface StreamBodyOptions {
  /** Response headers besides Content-Type (e.g. Content-Disposition). */
  headers?: Record<string, string>;
  contentType: string;
  /** Written before the engine's first byte. */
  prefix?: string;
  /** Rewrites each engine chunk before it is sent (chunk-level work only: it runs on the hot path). */
  mapChunk?: (chunk: Buffer) => Buffer;
  /** Written after the engine's last byte; computed then, so it can report what was streamed. */
  suffix?: () => string | Promise<string>;
  /**
   * How the body is compressed, when the route decides rather than the client's Accept-Encoding:
   * `coding` with `Content-Encoding` naming it (`header`: true), or a body that is itself a compressed
   * file (`header`: false: a `.csv.gz` download, which a client must save as sent, not decode).
   */
  encoding?: { coding: ContentEncoding; header: boolean };
}

export type ContentEncoding = 'zstd' | 'gzip' | 'identity';

/**
 * Waits for the engine's first chunk, so that an engine error before any byte (bad query, engine
 * unreachable) still becomes a proper error response with its status line, then streams the rest.
 */
export async function streamResponse(c: Context, source: Readable, options: StreamBodyOptions): Promise<Response> {
  const chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let first: IteratorResult<Buffer>;
  try {
    first = await chunks.next();
  } catch (err) {
    source.destroy();
    throw err;
  }
  const map = options.mapChunk ?? ((chunk: Buffer) => chunk);
  const encoding = options.encoding?.coding ?? chooseEncoding(c.req.header('accept-encoding'));
  async function* body(): AsyncGenerator<Buffer> {
    // Made when the body is first pulled and closed however it ends: a client gone mid-stream must not
    // leave a zlib context (several MB for zstd) to the garbage collector.
    const compress = compressor(encoding);
    try {
      // The prefix rides with the first engine chunk: one write, and one compressed frame less.
      const head = first.done ? Buffer.alloc(0) : map(first.value);
      yield compress.write(options.prefix ? Buffer.concat([Buffer.from(options.prefix), head]) : head);
      if (!first.done) {
        for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield compress.write(map(next.value));
      }
      if (options.suffix) yield compress.write(Buffer.from(await options.suffix()));
      yield compress.end();
    } finally {
      compress.close();
    }
  }

  const headers: Record<string, string> = { 'Content-Type': options.contentType, ...options.headers, Vary: 'Accept-Encoding' };
  if (encoding !== 'identity' && options.encoding?.header !== false) headers['Content-Encoding'] = encoding;
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (!outgoing)
    return new Response(
      pullStream(body(), () => source.destroy()),
      { status: 200, headers },
    );
  // Headers middleware prepared (request id, rate limits) go out with ours.
  c.res.headers.forEach((value, name) => (headers[name] ??= value));
  outgoing.writeHead(200, headers);
  void writeTo(outgoing, body(), source, (err) =>
    log.error('stream aborted', { request_id: c.get('requestId'), path: redactPath(c.req.path), status: 200, error: (err as Error).message }),
  );
  // Tells @hono/node-server the response is being written already.
  return new Response(null, { headers: { 'x-hono-already-sent': '1' } });
}

/**
 * Responses whose stream the service aborted after their headers (a failed engine read): not
 * delivered, though the client may have taken most of the bytes (response-end.ts).
 */
export const abortedByService = new WeakSet<ServerResponse>();

/** Streamed bodies being written to a socket, and those of them waiting for their client to take bytes. */
let streamsOpen = 0;
let streamsWaiting = 0;
metrics.gauge('tickhouse_http_streams_open', 'Streamed response bodies (exports, pages, Tardis files) being written', () => streamsOpen);
metrics.gauge(
  'tickhouse_http_streams_waiting',
  'Streamed response bodies waiting for their client to take what was sent (a slow or stalled reader): each holds a bounded amount',
  () => streamsWaiting,
);

/** Resolves when the socket wants more, or is gone; leaves no listener behind. */
function drained(out: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
  });
}

/**
 * The one loop from the engine to the socket: write, and wait for 'drain' when the socket is full. A
 * failure aborts the transfer (the client sees it cut, never a clean end), after `failed` logged it.
 * A client that keeps up never makes it wait, and a body made in JS (a Tardis slice, a book dataset)
 * would then be made and sent as one run of microtasks: every few ms it waits for a turn instead.
 */
async function writeTo(out: ServerResponse, body: AsyncGenerator<Buffer>, source: Readable, failed: (err: unknown) => void): Promise<void> {
  const gone = () => source.destroy();
  out.once('close', gone);
  streamsOpen++;
  const breaks = new LoopBreaks();
  try {
    for await (const chunk of body) {
      if (breaks.due()) await breaks.turn();
      if (out.destroyed) return;
      if (chunk.length > 0 && !out.write(chunk)) {
        streamsWaiting++;
        try {
          await drained(out);
        } finally {
          streamsWaiting--;
        }
      }
    }
    out.end();
  } catch (err) {
    // A client gone first is no failure of ours (its 'close' destroyed the source, which ended the loop).
    if (!out.destroyed) {
      abortedByService.add(out);
      failed(err);
    }
    out.destroy(err as Error);
  } finally {
    streamsOpen--;
    out.off('close', gone);
    source.destroy();
    await body.return(undefined);
  }
}

/** Exports are large and the engine writes > 150 MB/s: favour speed over ratio. */
const GZIP_LEVEL = 1;
const ZSTD_LEVEL = 3;
/** Node 22.15+ (the Docker image's Node 24): one zstd frame per response; Node 20: see compressor(). */
const ZLIB_HAS_ZSTD = typeof zlib.createZstdCompress === 'function';

/** The client's preference among what we can produce; zstd first when both are accepted (cheaper). */
export function chooseEncoding(acceptEncoding: string | undefined): ContentEncoding {
  const accepted = acceptedEncodings(acceptEncoding);
  if (accepted.has('zstd') && (ZLIB_HAS_ZSTD || zstdEncoder())) return 'zstd';
  if (accepted.has('gzip') || accepted.has('x-gzip')) return 'gzip';
  return 'identity';
}

/** zstd when the client accepts it and this process can produce it, gzip otherwise (even unasked: for bodies that must be compressed). */
export function compressedEncoding(acceptEncoding: string | undefined): 'zstd' | 'gzip' {
  return chooseEncoding(acceptEncoding) === 'zstd' ? 'zstd' : 'gzip';
}

/**
 * A web ReadableStream that pulls `body` as the HTTP layer asks for more, one chunk ahead
 * (highWaterMark 1): the engine formats the next chunk while this one is sent, and no more than that
 * is ever buffered. Cancel (client gone) stops the engine.
 */
function pullStream(body: AsyncGenerator<Buffer>, stop: () => void): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          // A pull must enqueue or close: the stream does not ask again on its own.
          let next = await body.next();
          while (!next.done && next.value.length === 0) next = await body.next();
          if (next.done) controller.close();
          else controller.enqueue(next.value);
        } catch (err) {
          stop();
          controller.error(err);
        }
      },
      async cancel() {
        stop();
        await body.return(undefined);
      },
    },
    { highWaterMark: 1 },
  );
}

/**
 * Compresses one chunk at a time, in place: a zlib stream is flushed after each chunk (gzip's
 * Z_SYNC_FLUSH; zstd's ZSTD_e_flush ends a block, the frame stays open), so compressed bytes leave
 * with each engine chunk instead of waiting for a window to fill (time to first byte, steady flow);
 * `end` gives what closes the stream (gzip's trailer, zstd's frame end). zstd is one frame per
 * response where Node's zlib has it (22.15 and later: the Docker image's Node 24). Node 20's zlib
 * has none: there each chunk becomes a zstd frame of its own through `@toondepauw/node-zstd` (a zstd
 * stream may hold any number of concatenated frames, RFC 8878 §3.1), which decoders that read one
 * frame per response cannot read whole (httpx 0.28 with zstandard fails when a read ends at a frame's
 * end): docs/guides/api.md, "Data semantics", says so.
 */
interface Compressor {
  write(chunk: Buffer): Buffer | Promise<Buffer>;
  end(): Buffer | Promise<Buffer>;
  /** Frees what the compressor holds, whether or not it ended. */
  close(): void;
}

function compressor(encoding: ContentEncoding): Compressor {
  if (encoding === 'identity') return { write: (chunk) => chunk, end: () => Buffer.alloc(0), close: () => {} };
  if (encoding === 'zstd') {
    if (ZLIB_HAS_ZSTD) {
      const zstd = zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL } });
      return flushedAfterEachChunk(zstd, zlib.constants.ZSTD_e_flush);
    }
    const encoder = zstdEncoder()!;
    return { write: (chunk) => (chunk.length ? encoder.encode(chunk) : chunk), end: () => Buffer.alloc(0), close: () => {} };
  }
  return flushedAfterEachChunk(zlib.createGzip({ level: GZIP_LEVEL }), zlib.constants.Z_SYNC_FLUSH);
}

/** A zlib compression stream driven one chunk at a time: write, flush, hand back what came out. */
function flushedAfterEachChunk(stream: zlib.Gzip | zlib.ZstdCompress, flushKind: number): Compressor {
  const out: Buffer[] = [];
  stream.on('data', (b: Buffer) => out.push(b));
  return {
    write: (chunk) => zlibStep(stream, out, (done) => (stream.write(chunk), stream.flush(flushKind, done))),
    // 'end': the trailer has been read out, not just written in ('finish').
    end: () => zlibStep(stream, out, (done) => (stream.once('end', done), stream.end())),
    close: () => stream.close(),
  };
}

/** Runs one step of a zlib stream and hands back the bytes it produced. */
function zlibStep(stream: zlib.Gzip | zlib.ZstdCompress, out: Buffer[], step: (done: () => void) => void): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    stream.once('error', reject);
    step(() => {
      stream.off('error', reject);
      resolve(Buffer.concat(out.splice(0)));
    });
  });
}

interface ZstdEncoder {
  encode(data: Buffer): Promise<Buffer>;
}

let zstdLoaded: ZstdEncoder | null | undefined;

/**
 * For Node 20, whose zlib has no zstd: `@toondepauw/node-zstd` ships prebuilt native binaries in its
 * npm packages and compresses off the main thread; when it is not installed, zstd is simply not offered.
 */
function zstdEncoder(): ZstdEncoder | null {
  if (zstdLoaded === undefined) {
    try {
      const mod = createRequire(import.meta.url)('@toondepauw/node-zstd') as { Encoder: new (level: number) => ZstdEncoder };
      zstdLoaded = new mod.Encoder(ZSTD_LEVEL);
    } catch {
      zstdLoaded = null;
    }
  }
  return zstdLoaded;
}
