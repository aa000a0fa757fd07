import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { CheckpointPolicy } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import { openDecompressed } from './compressed-files.js';
import { type GammaMarket, parseGammaMarkets } from './gamma.js';
import { lineBatches } from './lines.js';
import { fileSeq, Normalizer, type NormalizerStats, type RowSink } from './normalizer.js';
import { BatchWriter, type WriterStats } from './writer.js';

export interface ReplayProgress {
  lines: number;
  /** Rows the engine acknowledged so far, all tables. */
  rowsWritten: number;
  elapsedMs: number;
}

export interface ReplayOptions {
  /**
   * Identifies the input: seq values and deduplication tokens derive from it, so replaying the same
   * input under the same id changes nothing. Different inputs need different ids.
   */
  sourceId: string;
  /** Gamma market objects: outcome labels (tick `side`) and `markets` rows. */
  markets?: readonly GammaMarket[];
  batchRows?: number;
  checkpoints?: CheckpointPolicy | false;
  /** When given, counts each asset's events (ticks and market events) into it, with their first and last time + 1 ms. */
  perAsset?: Map<string, { events: number; from: number; to: number }>;
  /** Called at most every `progressEveryMs` (default 2000) while lines are read. */
  onProgress?: (progress: ReplayProgress) => void;
  progressEveryMs?: number;
}

export interface ReplaySummary {
  sourceId: string;
  normalizer: NormalizerStats;
  writer: WriterStats;
  /** Gamma objects that could not be turned into rows. */
  invalidMarkets: number;
  elapsedMs: number;
}

/**
 * Normalizes raw frame lines and writes the rows, waiting for the writer when it is behind; memory
 * stays flat however long the input. Resolves once every row is stored.
 */
export async function replayLines(
  engine: Engine,
  lines: AsyncIterable<string | string[]> | Iterable<string | string[]>,
  opts: ReplayOptions,
): Promise<ReplaySummary> {
  const started = performance.now();
  const writer = new BatchWriter(engine, { sourceId: opts.sourceId, batchRows: opts.batchRows });
  const sink = opts.perAsset ? countingSink(writer, opts.perAsset) : writer;
  const normalizer = new Normalizer(sink, { seq: fileSeq(opts.sourceId), checkpoints: opts.checkpoints });
  const gamma = parseGammaMarkets(opts.markets ?? []);
  normalizer.addMarkets(gamma.rows);

  const every = opts.progressEveryMs ?? 2000;
  let nextProgress = started + every;
  const progress = () => ({ lines: normalizer.stats.lines, rowsWritten: totalRows(writer.stats), elapsedMs: performance.now() - started });
  try {
    // Lines come one by one or in arrays (a file read chunk by chunk: one await per chunk, not per line).
    for await (const item of lines) {
      const single = typeof item === 'string';
      for (const line of single ? [item] : item) {
        normalizer.push(line);
        const wait = writer.ready();
        if (wait) await wait;
      }
      // Reading the clock on every line would cost more than the rest of a small line's work: once
      // every 1024 single lines, once an array.
      if (opts.onProgress && (!single || (normalizer.stats.lines & 1023) === 0) && performance.now() >= nextProgress) {
        nextProgress = performance.now() + every;
        opts.onProgress(progress());
      }
    }
  } catch (err) {
    // A read error (truncated file): what was sealed is stored, the partial rest is not (BatchWriter.settle).
    await writer.settle();
    throw err;
  }
  await writer.flush();
  return { sourceId: opts.sourceId, normalizer: normalizer.stats, writer: writer.stats, invalidMarkets: gamma.invalid, elapsedMs: performance.now() - started };
}

/** The writer, with each tick and market event counted for its asset on the way. */
function countingSink(writer: BatchWriter, counts: NonNullable<ReplayOptions['perAsset']>): RowSink {
  const count = (asset: string, t: number) => {
    const c = counts.get(asset);
    if (!c) counts.set(asset, { events: 1, from: t, to: t + 1 });
    else {
      c.events++;
      c.from = Math.min(c.from, t);
      c.to = Math.max(c.to, t + 1);
    }
  };
  return {
    tick: (r) => {
      count(r.asset_id, r.t);
      writer.tick(r);
    },
    marketEvent: (r) => {
      count(r.asset_id, r.t);
      writer.marketEvent(r);
    },
    snapshot: (r) => writer.snapshot(r),
    market: (r) => writer.market(r),
    bookCheck: (r) => writer.bookCheck(r),
    capture: (r) => writer.capture(r),
  };
}

export interface ReplayFileOptions {
  /** A Gamma `/markets` answer (JSON array) for outcome labels and questions. */
  marketsFile?: string;
  batchRows?: number;
  onProgress?: (progress: ReplayProgress) => void;
}

/** Bytes of decompressed content hashed into the source id: enough to tell files apart, cheap to read first. */
const ID_PREFIX_BYTES = 64 * 1024;

/**
 * Replays a file of raw frames, plain, gzip or zstd (by magic bytes), streamed line by
 * line. The source id is a hash of the first 64 KiB of decompressed content, so the same file — under
 * any name, compressed or not — replays onto itself without adding rows.
 */
export async function replayFile(engine: Engine, path: string, opts: ReplayFileOptions = {}): Promise<ReplaySummary> {
  const markets = opts.marketsFile ? await readGammaFile(opts.marketsFile) : undefined;
  const { chunks } = await openDecompressed(path);
  const iterator = chunks[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const head: Buffer[] = [];
  let headBytes = 0;
  while (headBytes < ID_PREFIX_BYTES) {
    const next = await iterator.next();
    if (next.done) break;
    head.push(next.value);
    headBytes += next.value.length;
  }
  const prefix = Buffer.concat(head).subarray(0, ID_PREFIX_BYTES);
  const sourceId = `file-${createHash('sha256').update(prefix).digest('hex').slice(0, 16)}`;
  async function* rest(): AsyncIterable<Buffer> {
    yield* head;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  }
  return replayLines(engine, lineBatches(rest()), { sourceId, markets, batchRows: opts.batchRows, onProgress: opts.onProgress });
}

/** The source id `replayFile` gives a file (so `import recorder` and `ingest replay` of one file dedupe each other). */
export async function frameFileSourceId(path: string): Promise<string> {
  const { chunks, raw } = await openDecompressed(path);
  const head: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of chunks) {
    head.push(chunk);
    bytes += chunk.length;
    if (bytes >= ID_PREFIX_BYTES) break;
  }
  raw.destroy();
  return `file-${createHash('sha256').update(Buffer.concat(head).subarray(0, ID_PREFIX_BYTES)).digest('hex').slice(0, 16)}`;
}

/** Reads a Gamma `/markets` answer; throws when it is not a JSON array. */
export async function readGammaFile(path: string): Promise<GammaMarket[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new Error(`${path}: ${err instanceof SyntaxError ? 'not JSON' : 'cannot be read'} (${(err as Error).message})`);
  }
  if (!Array.isArray(parsed)) throw new Error(`${path}: expected a JSON array of Gamma market objects`);
  return parsed as GammaMarket[];
}

export function totalRows(stats: WriterStats): number {
  return stats.rows.ticks + stats.rows.book_snapshots + stats.rows.markets + stats.rows.market_events;
}
