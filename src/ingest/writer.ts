import { createHash } from 'node:crypto';
import type { Engine, Settings } from '../clickhouse/engine.js';
import type { RowSink } from './normalizer.js';
import type { Level, MarketRow, SnapshotRow, TickRow } from './rows.js';

export type IngestTable = 'ticks' | 'book_snapshots' | 'markets';

const TABLES: readonly IngestTable[] = ['markets', 'ticks', 'book_snapshots'];

export interface WriterOptions {
  /** Names the stream of batches in deduplication tokens: the same source must give the same id. */
  sourceId: string;
  /** A batch is cut when it reaches this many rows (default 50 000) … */
  batchRows?: number;
  /** … or this many characters of JSONEachRow (default 32 MiB): full books make large rows. */
  batchChars?: number;
  /** Sealed batches waiting or in flight before `ready()` asks the producer to wait (default 2). */
  maxQueuedBatches?: number;
  /** Further attempts after a failed insert (default 2); deduplication makes them safe. */
  retries?: number;
}

export interface WriterStats {
  /** Rows the engine acknowledged, per table. */
  rows: Record<IngestTable, number>;
  /** Batches sent (markets batches whose rows were all stored already are not sent). */
  batches: Record<IngestTable, number>;
  /** Rows buffered or queued, not yet acknowledged. */
  pending: number;
  /** Duration of the last successful insert, ms. */
  lastInsertMs: number;
  /** Wall-clock time of the last successful insert (epoch ms), 0 before the first. */
  lastInsertAt: number;
  retries: number;
}

interface Batch {
  table: IngestTable;
  batchNo: number;
  lines: string[];
  markets: MarketRow[];
}

/**
 * Buffers rows per table and inserts them in batches, one insert at a time in the background so
 * normalizing the next batch overlaps with inserting this one.
 *
 * Batches are cut at exact row/size bounds while rows arrive, so the same rows always make the same
 * batches, and each carries `insert_deduplication_token = <sourceId>-<table>-<batchNo>-<digest>`:
 * a retried insert or a whole re-run replay is dropped by the engine (ticks, book_snapshots and the
 * rollups fed from ticks keep `non_replicated_deduplication_window`). The digest of the batch body
 * keeps two sources that share an id (e.g. two files with the same first 64 KiB) from dropping each
 * other's different batches.
 *
 * Producers call `ready()` between frames (back-pressure) and `flush()` at the end or on a timer.
 */
export class BatchWriter implements RowSink {
  readonly stats: WriterStats = {
    rows: { ticks: 0, book_snapshots: 0, markets: 0 },
    batches: { ticks: 0, book_snapshots: 0, markets: 0 },
    pending: 0,
    lastInsertMs: 0,
    lastInsertAt: 0,
    retries: 0,
  };
  private readonly sourceId: string;
  private readonly batchRows: number;
  private readonly batchChars: number;
  private readonly maxQueued: number;
  private readonly retries: number;
  private readonly lines: Record<'ticks' | 'book_snapshots', string[]> = { ticks: [], book_snapshots: [] };
  private readonly chars = { ticks: 0, book_snapshots: 0 };
  private markets: MarketRow[] = [];
  private readonly nextBatchNo: Record<IngestTable, number> = { ticks: 0, book_snapshots: 0, markets: 0 };
  private readonly queue: Batch[] = [];
  private readonly waiters: (() => void)[] = [];
  private running: Promise<void> | null = null;
  private failure: Error | null = null;

  constructor(
    private readonly engine: Engine,
    options: WriterOptions,
  ) {
    this.sourceId = options.sourceId;
    this.batchRows = options.batchRows ?? 50_000;
    this.batchChars = options.batchChars ?? 32 * 1024 * 1024;
    this.maxQueued = options.maxQueuedBatches ?? 2;
    this.retries = options.retries ?? 2;
  }

  tick(r: TickRow): void {
    this.add(
      'ticks',
      `{"asset_id":${JSON.stringify(r.asset_id)},"t":${r.t},"seq":${r.seq},"event":"${r.event}","side":${JSON.stringify(r.side)},"best_bid":${r.best_bid},"best_ask":${r.best_ask},"price":${r.price},"size":${r.size},"market":${JSON.stringify(r.market)}}`,
    );
  }

  snapshot(r: SnapshotRow): void {
    this.add(
      'book_snapshots',
      `{"asset_id":${JSON.stringify(r.asset_id)},"t":${r.t},"seq":${r.seq},"is_checkpoint":${r.is_checkpoint},"market":${JSON.stringify(r.market)},"bids":${levelsJson(r.bids)},"asks":${levelsJson(r.asks)}}`,
    );
  }

  market(r: MarketRow): void {
    this.markets.push(r);
    this.stats.pending++;
    if (this.markets.length >= this.batchRows) this.seal('markets');
  }

  /**
   * undefined when the producer may go on at once; otherwise a promise that settles when a queued
   * batch is done. Rejects once an insert has failed for good.
   */
  ready(): Promise<void> | undefined {
    if (this.failure) return Promise.reject(this.failure);
    if (this.queue.length < this.maxQueued) return undefined;
    return new Promise((resolve, reject) => {
      this.waiters.push(() => (this.failure ? reject(this.failure) : resolve()));
    });
  }

  /** Sends every buffered row and waits until all batches are stored; throws the insert error, if any. */
  async flush(): Promise<void> {
    for (const table of TABLES) this.seal(table);
    while (this.running) await this.running;
    if (this.failure) throw this.failure;
  }

  private add(table: 'ticks' | 'book_snapshots', line: string): void {
    this.lines[table].push(line);
    this.chars[table] += line.length + 1;
    this.stats.pending++;
    if (this.lines[table].length >= this.batchRows || this.chars[table] >= this.batchChars) this.seal(table);
  }

  private seal(table: IngestTable): void {
    let batch: Batch;
    if (table === 'markets') {
      if (this.markets.length === 0) return;
      batch = { table, batchNo: this.nextBatchNo.markets++, lines: [], markets: this.markets };
      this.markets = [];
    } else {
      if (this.lines[table].length === 0) return;
      batch = { table, batchNo: this.nextBatchNo[table]++, lines: this.lines[table], markets: [] };
      this.lines[table] = [];
      this.chars[table] = 0;
    }
    this.queue.push(batch);
    this.running ??= this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0 && !this.failure) {
        const batch = this.queue[0];
        try {
          await this.insertWithRetries(batch);
        } catch (err) {
          this.failure = err instanceof Error ? err : new Error(String(err));
        }
        this.queue.shift();
        this.stats.pending -= batch.lines.length + batch.markets.length;
        this.waiters.splice(0).forEach((wake) => wake());
      }
    } finally {
      this.running = null;
    }
  }

  private async insertWithRetries(batch: Batch): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.insert(batch);
      } catch (err) {
        if (attempt >= this.retries) throw err;
        this.stats.retries++;
        await new Promise((r) => setTimeout(r, 250 * 4 ** attempt));
      }
    }
  }

  private async insert(batch: Batch): Promise<void> {
    const lines = batch.table === 'markets' ? (await this.unstoredMarkets(batch.markets)).map(marketJson) : batch.lines;
    if (lines.length === 0) return;
    const body = lines.join('\n');
    const digest = createHash('sha1').update(body).digest('hex').slice(0, 16);
    const settings: Settings = {
      insert_deduplication_token: `${this.sourceId}-${batch.table}-${batch.batchNo}-${digest}`,
      // Without it a deduplicated ticks insert would still be counted again by candles_1m, asset_stats and activity_1m.
      deduplicate_blocks_in_dependent_materialized_views: 1,
    };
    const started = performance.now();
    await this.engine.insertJsonEachRow(batch.table, body, settings);
    this.stats.lastInsertMs = performance.now() - started;
    this.stats.lastInsertAt = Date.now();
    this.stats.rows[batch.table] += lines.length;
    this.stats.batches[batch.table]++;
  }

  /**
   * `markets` is a ReplacingMergeTree without a deduplication window, so identical versions are
   * filtered here instead: re-replaying metadata then adds no rows at all.
   */
  private async unstoredMarkets(rows: MarketRow[]): Promise<MarketRow[]> {
    const stored = await this.engine.rows<Omit<MarketRow, 'updated_at'> & { updated_at: string | number }>(
      `SELECT asset_id, market, outcome, question, slug, toUnixTimestamp64Milli(updated_at) AS updated_at
       FROM markets WHERE asset_id IN {ids:Array(String)}`,
      { params: { ids: [...new Set(rows.map((r) => r.asset_id))] } },
    );
    const seen = new Set(stored.map((r) => marketKey({ ...r, updated_at: Number(r.updated_at) })));
    return rows.filter((r) => {
      const key = marketKey(r);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }
}

function marketKey(r: MarketRow): string {
  return JSON.stringify([r.asset_id, r.market, r.outcome, r.question, r.slug, r.updated_at]);
}

function marketJson(r: MarketRow): string {
  return `{"asset_id":${JSON.stringify(r.asset_id)},"market":${JSON.stringify(r.market)},"outcome":${JSON.stringify(r.outcome)},"question":${JSON.stringify(r.question)},"slug":${JSON.stringify(r.slug)},"updated_at":${r.updated_at}}`;
}

/** Array(Tuple(price, size)) as JSONEachRow reads named tuples by default: objects. */
function levelsJson(levels: readonly Level[]): string {
  let out = '[';
  for (let i = 0; i < levels.length; i++) {
    if (i > 0) out += ',';
    out += `{"price":${levels[i][0]},"size":${levels[i][1]}}`;
  }
  return out + ']';
}
