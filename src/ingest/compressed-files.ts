import { createReadStream, type ReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { Decompress } from 'fzstd';

/**
 * Files read plain, gzip or zstd as a stream of decompressed chunks: frame files (frame-files.ts) and
 * every input of `npm run import` (import/sources.ts).
 */

export type Compression = 'gzip' | 'zstd' | 'none';

/** By magic bytes, not by name: a renamed file reads the same. */
export async function compressionOf(path: string): Promise<Compression> {
  const file = await open(path, 'r');
  try {
    const magic = Buffer.alloc(4);
    const { bytesRead } = await file.read(magic, 0, 4, 0);
    if (bytesRead >= 2 && magic[0] === 0x1f && magic[1] === 0x8b) return 'gzip';
    if (bytesRead === 4 && magic.readUInt32LE(0) === 0xfd2fb528) return 'zstd';
    return 'none';
  } finally {
    await file.close();
  }
}

/** A file's decompressed bytes as chunks; `raw` is the file stream, whose bytesRead tells progress. */
export async function openDecompressed(path: string): Promise<{ chunks: AsyncIterable<Buffer>; raw: ReadStream }> {
  const kind = await compressionOf(path);
  const raw = createReadStream(path, { highWaterMark: 1 << 20 });
  if (kind === 'none') return { chunks: raw, raw };
  // pipe() would leave a read error of the file unseen by the consumer of the decompressor.
  const inflate = kind === 'gzip' ? createGunzip() : zstdDecompressStream();
  raw.on('error', (err) => inflate.destroy(err));
  return { chunks: raw.pipe(inflate), raw };
}

/**
 * Streaming zstd: Node 20 has no zlib zstd and @toondepauw/node-zstd decodes whole buffers only;
 * fzstd decodes chunk by chunk in JS (docs/INGEST.md §6 gives the cost). A frame cut short is an error at the end.
 */
function zstdDecompressStream(): Transform {
  let out: Transform;
  let ended = false;
  const dec = new Decompress((chunk, final) => {
    out.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if (final) ended = true;
  });
  out = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      try {
        dec.push(chunk);
        cb();
      } catch (err) {
        cb(err as Error);
      }
    },
    flush(cb) {
      const truncated = new Error('unexpected end of zstd data (truncated file)');
      try {
        dec.push(new Uint8Array(0), true);
        cb(ended ? null : truncated);
      } catch {
        // fzstd's own words for a cut frame ("unexpected EOF") do not say which stream.
        cb(truncated);
      }
    },
  });
  return out;
}
