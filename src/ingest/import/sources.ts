import { createReadStream, type ReadStream } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { Decompress } from 'fzstd';

/**
 * Input files of `npm run import` (docs/INGEST.md §6): paths, directories (walked, sorted) and globs
 * (`*`, `?` in the last path segment; the shell usually expands them first), read plain, gzip or zstd
 * as a stream of decompressed chunks.
 */

/**
 * The files the arguments name, sorted by path within each argument, each once; `keep` chooses among
 * the files found in a directory (a file named outright is always taken).
 */
export async function expandInputs(inputs: readonly string[], keep: (name: string) => boolean = () => true): Promise<string[]> {
  const out: string[] = [];
  for (const input of inputs) {
    const name = basename(input);
    if (/[*?]/.test(name)) {
      const pattern = new RegExp(
        `^${name
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.')}$`,
      );
      const dir = dirname(input);
      const names = (await readdir(dir)).filter((n) => pattern.test(n)).sort();
      if (names.length === 0) throw new Error(`${input}: no file matches`);
      out.push(...names.map((n) => join(dir, n)));
    } else {
      const info = await stat(input).catch(() => {
        throw new Error(`cannot read ${input}`);
      });
      if (info.isDirectory()) out.push(...(await walk(input)).filter((f) => keep(basename(f))));
      // A device or a pipe has no size or end to plan from (/dev/zero never ends): only files are read.
      else if (!info.isFile()) throw new Error(`${input} is not a regular file`);
      else out.push(input);
    }
  }
  return [...new Set(out)];
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(path)));
    else if (entry.isFile() && !entry.name.startsWith('.')) out.push(path);
  }
  return out;
}

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
