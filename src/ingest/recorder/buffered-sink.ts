import type { Engine } from '../../clickhouse/engine.js';
import { EngineUnavailableError } from '../../clickhouse/errors.js';
import type { BookCheckRow, CaptureRow, MarketEventRow, MarketRow, SnapshotRow, TickRow } from '../../clickhouse/rows.js';
import { errorText, log } from '../../log.js';
import type { RowSink } from '../normalizer.js';
import { BatchWriter, type IngestTable } from '../writer.js';
import { recorderMetrics } from './metrics.js';

export interface BufferedSinkOptions {
  /** Prefix of every batch's deduplication tokens: unique per recorder run. */
  runId: string;
  /** A batch is cut at this many rows … */
  batchRows: number;
  /** … or when its first row is this old. */
  batchAgeMs: number;
  /** Rows not yet stored at which producers are asked to pause; they may resume at half. */
  maxBufferedRows: number;
  retryMinMs: number;
  retryMaxMs: number;
  /** Called when the buffer crosses its bound (true: stop reading) and when it has room again (false). */
  onPressure?: (full: boolean) => void;
}

export interface SinkStats {
  /** Rows stored, per table. */
  stored: Record<IngestTable, number>;
  /** Rows accepted but not yet stored. */
  pending: number;
  full: boolean;
  /** Failed insert attempts (each retried). */
  failures: number;
  /** Since when inserts fail (epoch ms), 0 while they succeed. */
  failingSince: number;
  lastInsertMs: number;
}

/**
 * The writer looks a batch's market rows up by asset id before inserting them, and a server engine
 * sends those ids in the URL: 100 Polymarket token ids (~80 characters each) stay well inside the
 * 16 KiB a typical HTTP front end accepts. A discovery of thousands of markets becomes many batches.
 */
const MARKETS_PER_BATCH = 100;

interface Batch {
  no: number;
  ticks: TickRow[];
  snapshots: SnapshotRow[];
  markets: MarketRow[];
  checks: BookCheckRow[];
  captures: CaptureRow[];
  marketEvents: MarketEventRow[];
  size: number;
}

/**
 * The recorder's batcher: rows are cut into batches by size or age and inserted one batch at a time.
 * A failed insert is retried with backoff for as long as the process lives: the batch stays queued,
 * new rows keep queuing behind it, and once the queue holds `maxBufferedRows` the producer is told
 * to stop reading. Nothing is dropped.
 *
 * Each batch is written by a one-shot BatchWriter named after the batch, so a retry sends the same
 * rows under the same deduplication tokens: an insert that reached the engine before its answer
 * was lost is not stored twice.
 */
export class BufferedSink implements RowSink {
  readonly stats: SinkStats = {
    stored: { ticks: 0, book_snapshots: 0, markets: 0, book_checks: 0, capture_events: 0, market_events: 0 },
    pending: 0,
    full: false,
    failures: 0,
    failingSince: 0,
    lastInsertMs: 0,
  };
  private current: Batch;
  private nextNo = 0;
  private readonly queue: Batch[] = [];
  private ageTimer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private retryTimer: { timer: NodeJS.Timeout; wake: () => void } | null = null;
  private readonly idleWaiters: (() => void)[] = [];

  constructor(
    private readonly engine: Engine,
    private readonly options: BufferedSinkOptions,
  ) {
    this.current = this.emptyBatch();
  }

  tick(row: TickRow): void {
    this.current.ticks.push(row);
    this.added();
  }

  snapshot(row: SnapshotRow): void {
    this.current.snapshots.push(row);
    this.added();
  }

  bookCheck(row: BookCheckRow): void {
    this.current.checks.push(row);
    this.added();
  }

  capture(row: CaptureRow): void {
    this.current.captures.push(row);
    this.added();
  }

  marketEvent(row: MarketEventRow): void {
    this.current.marketEvents.push(row);
    this.added();
  }

  market(row: MarketRow): void {
    this.current.markets.push(row);
    this.added();
    if (this.current.markets.length >= MARKETS_PER_BATCH) this.seal();
  }

  /** Seals what is buffered and resolves once every row accepted so far is stored (however long that takes). */
  async flush(): Promise<void> {
    this.seal();
    // A retry waiting out its backoff is tried now: a shutdown should not sit out a 30 s delay.
    this.retryTimer?.wake();
    if (this.queue.length === 0 && !this.running) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private added(): void {
    this.current.size++;
    this.stats.pending++;
    if (this.current.size >= this.options.batchRows) this.seal();
    else if (!this.ageTimer) this.ageTimer = setTimeout(() => this.seal(), this.options.batchAgeMs);
    if (!this.stats.full && this.stats.pending >= this.options.maxBufferedRows) {
      this.stats.full = true;
      log.warn('recorder buffer full: pausing reading until ClickHouse catches up', { pending_rows: this.stats.pending });
      this.options.onPressure?.(true);
    }
  }

  private seal(): void {
    if (this.ageTimer) clearTimeout(this.ageTimer);
    this.ageTimer = null;
    if (this.current.size === 0) return;
    this.queue.push(this.current);
    this.current = this.emptyBatch();
    this.running ??= this.drain();
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue[0];
      await this.storeWithRetries(batch);
      this.queue.shift();
      this.stats.pending -= batch.size;
      if (this.stats.full && this.stats.pending <= this.options.maxBufferedRows / 2) {
        this.stats.full = false;
        log.info('recorder buffer has room again: resuming reading', { pending_rows: this.stats.pending });
        this.options.onPressure?.(false);
      }
    }
    this.running = null;
    this.idleWaiters.splice(0).forEach((wake) => wake());
  }

  private async storeWithRetries(batch: Batch): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.store(batch);
        if (this.stats.failingSince) {
          log.info('ClickHouse inserts work again: buffered rows are being written', {
            outage_ms: Date.now() - this.stats.failingSince,
            pending_rows: this.stats.pending,
          });
          this.stats.failingSince = 0;
        }
        return;
      } catch (err) {
        this.stats.failures++;
        recorderMetrics.insertFailures.inc();
        this.stats.failingSince ||= Date.now();
        const delay = Math.min(this.options.retryMaxMs, this.options.retryMinMs * 2 ** Math.min(attempt, 30));
        const wait = Math.round(delay / 2 + (Math.random() * delay) / 2);
        const fields = { pending_rows: this.stats.pending, attempt: attempt + 1, retry_in_ms: wait, error: errorText(err) };
        if (err instanceof EngineUnavailableError) log.warn('ClickHouse unavailable: rows stay buffered, retrying', fields);
        else log.error('insert failed: rows stay buffered, retrying', fields);
        await new Promise<void>((resolve) => {
          const wake = () => {
            clearTimeout(timer);
            this.retryTimer = null;
            resolve();
          };
          const timer = setTimeout(wake, wait);
          this.retryTimer = { timer, wake };
        });
      }
    }
  }

  private async store(batch: Batch): Promise<void> {
    const writer = new BatchWriter(this.engine, { sourceId: `${this.options.runId}-${batch.no}`, batchRows: batch.size + 1, retries: 0 });
    for (const row of batch.markets) writer.market(row);
    for (const row of batch.ticks) writer.tick(row);
    for (const row of batch.snapshots) writer.snapshot(row);
    for (const row of batch.checks) writer.bookCheck(row);
    for (const row of batch.captures) writer.capture(row);
    for (const row of batch.marketEvents) writer.marketEvent(row);
    const started = performance.now();
    await writer.flush();
    this.stats.lastInsertMs = performance.now() - started;
    for (const table of Object.keys(this.stats.stored) as IngestTable[]) {
      this.stats.stored[table] += writer.stats.rows[table];
      recorderMetrics.rows.inc({ table }, writer.stats.rows[table]);
    }
  }

  private emptyBatch(): Batch {
    return { no: this.nextNo++, ticks: [], snapshots: [], markets: [], checks: [], captures: [], marketEvents: [], size: 0 };
  }
}
