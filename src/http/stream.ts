import { createRequire } from 'node:module';
import { Readable, Transform, pipeline } from 'node:stream';
import { constants as zlibConstants, createGzip } from 'node:zlib';
import { acceptedEncodings } from './accept-encoding.js';

/**
 * Turns an engine byte stream into an HTTP response body. The engine's bytes go to the socket as they
 * are (optionally between a prefix and a suffix, e.g. a JSON envelope); back-pressure reaches the
 * engine because the body is pulled, never pushed; a client that goes away destroys the engine
 * stream (which cancels its query); a failure after the first byte errors the body, which makes
 * @hono/node-server destroy the socket: the client sees a truncated transfer, never a short file.
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
  /** The request's Accept-Encoding: gzip or zstd are applied when the client accepts them. */
  acceptEncoding?: string;
}

export type ContentEncoding = 'zstd' | 'gzip' | 'identity';

/**
 * Waits for the engine's first chunk, so that an engine error before any byte (bad query, engine
 * unreachable) still becomes a proper error response with its status line, then streams the rest.
 */
export async function streamResponse(source: Readable, options: StreamBodyOptions): Promise<Response> {
  const chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let first: IteratorResult<Buffer>;
  try {
    first = await chunks.next();
  } catch (err) {
    source.destroy();
    throw err;
  }
  const map = options.mapChunk ?? ((chunk: Buffer) => chunk);
  async function* framed() {
    // The prefix rides with the first engine chunk: one write, and one compressed frame less.
    const head = first.done ? Buffer.alloc(0) : map(first.value);
    yield options.prefix ? Buffer.concat([Buffer.from(options.prefix), head]) : head;
    if (!first.done) {
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
        yield map(next.value);
      }
    }
    if (options.suffix) yield Buffer.from(await options.suffix());
  }

  const encoding = chooseEncoding(options.acceptEncoding);
  const framedStream = Readable.from(framed(), { objectMode: false, highWaterMark: 1 });
  let body: Readable = framedStream;
  if (encoding !== 'identity') {
    // Z_SYNC_FLUSH per chunk: compressed bytes leave with each engine chunk instead of waiting for
    // zlib's window to fill (time to first byte, steady flow).
    const compressor = encoding === 'gzip' ? createGzip({ level: GZIP_LEVEL, flush: zlibConstants.Z_SYNC_FLUSH }) : zstdFrames(zstdEncoder()!);
    body = pipeline(framedStream, compressor, () => {});
  }
  const stopEngine = () => {
    source.destroy();
    framedStream.destroy();
    body.destroy();
  };

  const headers: Record<string, string> = { 'Content-Type': options.contentType, ...options.headers, Vary: 'Accept-Encoding' };
  if (encoding !== 'identity') headers['Content-Encoding'] = encoding;
  return new Response(pullStream(body, stopEngine), { status: 200, headers });
}

/** Exports are large and the engine writes > 150 MB/s: favour speed over ratio. */
const GZIP_LEVEL = 1;
const ZSTD_LEVEL = 3;

/** The client's preference among what we can produce; zstd first when both are accepted (cheaper). */
export function chooseEncoding(acceptEncoding: string | undefined): ContentEncoding {
  const accepted = acceptedEncodings(acceptEncoding);
  if (accepted.has('zstd') && zstdEncoder()) return 'zstd';
  if (accepted.has('gzip') || accepted.has('x-gzip')) return 'gzip';
  return 'identity';
}

/**
 * A web ReadableStream that reads `body` as the HTTP layer asks for more, one chunk ahead
 * (highWaterMark 1): the engine formats the next chunk while the socket sends this one, and no
 * more than that is ever buffered. Cancel (client gone) stops the engine.
 */
function pullStream(body: Readable, stop: () => void): ReadableStream<Uint8Array> {
  const it = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await it.next();
          if (next.done) controller.close();
          else controller.enqueue(next.value);
        } catch (err) {
          stop();
          controller.error(err);
        }
      },
      cancel() {
        stop();
      },
    },
    { highWaterMark: 1 },
  );
}

interface ZstdEncoder {
  encode(data: Buffer): Promise<Buffer>;
}

let zstdLoaded: ZstdEncoder | null | undefined;

/**
 * Node 20's zlib has no zstd. `@toondepauw/node-zstd` ships prebuilt native binaries in its npm
 * packages and compresses off the main thread; when it is not installed, zstd is simply not offered.
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

/**
 * Compresses each chunk as its own zstd frame. A zstd stream may hold any number of concatenated
 * frames (RFC 8878 §3.1) and every decoder reads them in order, so the output is one valid body, and
 * each chunk leaves as soon as it is compressed instead of waiting for a full window.
 */
function zstdFrames(encoder: ZstdEncoder): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (chunk.length === 0) return done();
      encoder.encode(chunk).then((frame) => done(null, frame), done);
    },
  });
}
