import { createHash } from 'node:crypto';
import type { Level } from '../book/index.js';
import type { Engine, Settings } from '../clickhouse/engine.js';
import type { BookCheckRow, CaptureRow, FeeFields, MarketEventRow, MarketRow, SnapshotRow, TickRow } from '../clickhouse/rows.js';
import type { RowSink } from './normalizer.js';

export type IngestTable = 'ticks' | 'book_snapshots' | 'markets' | 'book_checks' | 'capture_events' | 'market_events';

const TABLES: readonly IngestTable[] = ['markets', 'ticks', 'book_snapshots', 'book_checks', 'capture_events', 'market_events'];
type LineTable = Exclude<IngestTable, 'markets'>;

export interface WriterOptions {
  /** Names the stream of batches in deduplication tokens: the same source must give the same id. */
  sourceId: string;
  /** A batch is cut when it reaches this many rows (default 50 000) … */
  batchRows?: number;
  /** … or this many bytes of text (default 32 MiB): full books make large rows. */
  batchBytes?: number;
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
  rows: number;
  /** JSONEachRow body (every table but markets). */
  body: Buffer | null;
  /** markets rows, serialized only after filtering out stored ones. */
  markets: MarketRow[];
}

const CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * Text lines (JSONEachRow, TabSeparated) copied into off-heap chunks as they are made. Keeping 50 000 template strings
 * alive until the batch is sent would leave the GC marking millions of string fragments; copied
 * at once, each line dies young.
 */
class LineBuffer {
  private chunks: Buffer[] = [];
  // Allocated on the first line: a writer used for a handful of rows (the recorder's) should not cost 4 MiB.
  private chunk = Buffer.alloc(0);
  private offset = 0;
  rows = 0;
  bytes = 0;

  /** `ascii`: the line is known to hold ASCII only, copied byte for byte (several times cheaper than UTF-8 encoding). */
  add(line: string, ascii = false): void {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit; +1 for the newline.
    const worst = (ascii ? line.length : line.length * 3) + 1;
    if (this.offset + worst > this.chunk.length) {
      if (this.offset > 0) this.chunks.push(this.chunk.subarray(0, this.offset));
      this.chunk = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, worst));
      this.offset = 0;
    }
    const written = this.chunk.write(line, this.offset, ascii ? 'latin1' : 'utf8');
    this.chunk[this.offset + written] = 10;
    this.offset += written + 1;
    this.bytes += written + 1;
    this.rows++;
  }

  /** The lines so far as one body; the buffer starts over empty. */
  take(): Buffer {
    this.chunks.push(this.chunk.subarray(0, this.offset));
    const body = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    this.chunks = [];
    this.chunk = Buffer.alloc(0);
    this.offset = 0;
    this.rows = 0;
    this.bytes = 0;
    return body;
  }
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
    rows: { ticks: 0, book_snapshots: 0, markets: 0, book_checks: 0, capture_events: 0, market_events: 0 },
    batches: { ticks: 0, book_snapshots: 0, markets: 0, book_checks: 0, capture_events: 0, market_events: 0 },
    pending: 0,
    lastInsertMs: 0,
    lastInsertAt: 0,
    retries: 0,
  };
  private readonly sourceId: string;
  private readonly batchRows: number;
  private readonly batchBytes: number;
  private readonly maxQueued: number;
  private readonly retries: number;
  private readonly lines: Record<LineTable, LineBuffer> = {
    ticks: new LineBuffer(),
    book_snapshots: new LineBuffer(),
    book_checks: new LineBuffer(),
    capture_events: new LineBuffer(),
    market_events: new LineBuffer(),
  };
  private markets: MarketRow[] = [];
  /** TabSeparated texts of the strings ticks repeat (an asset's id, label and market), made once per run of equal values. */
  private readonly tsv = { asset: lastText(), side: lastText(), market: lastText(), time: timeText(3), localTime: timeText(6) };
  private readonly nextBatchNo: Record<IngestTable, number> = {
    ticks: 0,
    book_snapshots: 0,
    markets: 0,
    book_checks: 0,
    capture_events: 0,
    market_events: 0,
  };
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
    this.batchBytes = options.batchBytes ?? 32 * 1024 * 1024;
    this.maxQueued = options.maxQueuedBatches ?? 2;
    this.retries = options.retries ?? 2;
  }

  /**
   * Ticks, the bulk of every ingest, go as TabSeparated (TICK_COLUMNS): half the bytes of JSON and less
   * for the engine to parse. `\N` leaves local_t to its DEFAULT (t) and fee_rate_bps NULL.
   */
  tick(r: TickRow): void {
    const local = r.local_t === undefined ? '\\N' : this.tsv.localTime.text(r.local_t);
    const fee = r.fee_rate_bps === undefined ? '\\N' : r.fee_rate_bps;
    const { asset, side, market } = this.tsv;
    const tx = r.tx_hash ? tsvText(r.tx_hash) : '';
    this.add(
      'ticks',
      `${asset.text(r.asset_id)}\t${this.tsv.time.text(r.t)}\t${r.seq}\t${r.event}\t${side.text(r.side)}\t` +
        `${r.best_bid}\t${r.best_ask}\t${r.price}\t${r.size}\t` +
        `${r.book_side}\t${market.text(r.market)}\t${local}\t${fee}\t${tx}`,
      // Numbers, names of enums and the escaped texts: ASCII unless one of the texts is not.
      asset.ascii && side.ascii && market.ascii && isAscii(tx),
    );
  }

  snapshot(r: SnapshotRow): void {
    let extra = r.local_t === undefined ? '' : `,"local_t":${r.local_t}`;
    if (r.tick_size !== undefined) extra += `,"tick_size":${r.tick_size}`;
    if (r.last_trade_price !== undefined) extra += `,"last_trade_price":${r.last_trade_price}`;
    this.add(
      'book_snapshots',
      `{"asset_id":${JSON.stringify(r.asset_id)},"t":${r.t},"seq":${r.seq},"is_checkpoint":${r.is_checkpoint},"market":${JSON.stringify(r.market)},` +
        `"bids":${levelPairs(r.bids)},"asks":${levelPairs(r.asks)}${extra}}`,
    );
  }

  /** Rare rows (market events): plain JSON.stringify, absent members left to the columns' defaults. */
  marketEvent(r: MarketEventRow): void {
    const { fees, ...row } = r;
    this.add('market_events', JSON.stringify({ ...row, ...fees }));
  }

  bookCheck(r: BookCheckRow): void {
    this.add(
      'book_checks',
      `{"asset_id":${JSON.stringify(r.asset_id)},"t":${r.t},"seq":${r.seq},"verdict":"${r.verdict}","levels_differing":${r.levels_differing}}`,
    );
  }

  capture(r: CaptureRow): void {
    this.add(
      'capture_events',
      `{"asset_id":${JSON.stringify(r.asset_id)},"t":${r.t},"seq":${r.seq},"run":${JSON.stringify(r.run)},"socket":${r.socket},"kind":"${r.kind}"}`,
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

  /**
   * Waits for the batches already sealed, sending none of the buffered rows: after a failed read the
   * partial last batches would differ from a clean import's and so escape deduplication on a rerun.
   */
  async settle(): Promise<void> {
    while (this.running) await this.running;
  }

  private add(table: LineTable, line: string, ascii = false): void {
    const buffer = this.lines[table];
    buffer.add(line, ascii);
    this.stats.pending++;
    if (buffer.rows >= this.batchRows || buffer.bytes >= this.batchBytes) this.seal(table);
  }

  private seal(table: IngestTable): void {
    let batch: Batch;
    if (table === 'markets') {
      if (this.markets.length === 0) return;
      batch = { table, batchNo: this.nextBatchNo.markets++, rows: this.markets.length, body: null, markets: this.markets };
      this.markets = [];
    } else {
      const buffer = this.lines[table];
      if (buffer.rows === 0) return;
      batch = { table, batchNo: this.nextBatchNo[table]++, rows: buffer.rows, body: null, markets: [] };
      batch.body = buffer.take();
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
        this.stats.pending -= batch.rows;
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
    let body: string | Buffer;
    let rows: number;
    if (batch.body) {
      body = batch.body;
      rows = batch.rows;
    } else {
      const fresh = await this.unstoredMarkets(batch.markets);
      body = fresh.map(marketJson).join('\n');
      rows = fresh.length;
    }
    if (rows === 0) return;
    const digest = createHash('sha1')
      .update(batch.body ?? body)
      .digest('hex')
      .slice(0, 16);
    const settings: Settings = {
      insert_deduplication_token: `${this.sourceId}-${batch.table}-${batch.batchNo}-${digest}`,
      // Without it a deduplicated ticks insert would still be counted again by the candle rollups, asset_stats and activity_1m.
      deduplicate_blocks_in_dependent_materialized_views: 1,
      // The views of ticks (book_events, candles, stats) and of book_snapshots run beside each other, not one after the other.
      parallel_view_processing: 1,
    };
    // Book levels are written as [price, size] pairs (levelPairs).
    if (batch.table === 'book_snapshots') settings.input_format_json_named_tuples_as_objects = 0;
    const started = performance.now();
    if (batch.table === 'ticks') await this.engine.insertTsv('ticks', TICK_COLUMNS, body, settings);
    else await this.engine.insertJsonEachRow(batch.table, body, settings);
    this.stats.lastInsertMs = performance.now() - started;
    this.stats.lastInsertAt = Date.now();
    this.stats.rows[batch.table] += rows;
    this.stats.batches[batch.table]++;
  }

  /**
   * `markets` is a ReplacingMergeTree without a deduplication window, so identical versions are
   * filtered here instead: re-replaying metadata then adds no rows at all.
   */
  private async unstoredMarkets(rows: MarketRow[]): Promise<MarketRow[]> {
    const ids = [...new Set(rows.map((r) => r.asset_id))];
    const stored: (Omit<MarketRow, 'updated_at'> & { updated_at: string | number })[] = [];
    // A few hundred ids per query keep the bound parameter within a server's URL length limit.
    for (let i = 0; i < ids.length; i += 200) {
      stored.push(
        ...(await this.engine.rows<Omit<MarketRow, 'updated_at'> & { updated_at: string | number }>(
          `SELECT asset_id, market, outcome, question, slug, min_order_size, tick_size, neg_risk, ${FEE_COLUMNS.join(', ')},
             toUnixTimestamp64Milli(updated_at) AS updated_at
           FROM markets WHERE asset_id IN {ids:Array(String)}`,
          { params: { ids: ids.slice(i, i + 200) } },
        )),
      );
    }
    const seen = new Set(stored.map((r) => marketKey({ ...r, fees: r as FeeFields, updated_at: Number(r.updated_at) })));
    return rows.filter((r) => {
      const key = marketKey(r);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }
}

/** The ticks table's columns in the order tick() writes them. */
const TICK_COLUMNS = [
  'asset_id',
  't',
  'seq',
  'event',
  'side',
  'best_bid',
  'best_ask',
  'price',
  'size',
  'book_side',
  'market',
  'local_t',
  'fee_rate_bps',
  'tx_hash',
] as const;

const TSV_SPECIAL = /[\\\t\n\r]/;

/** A string as a TabSeparated field: backslash, tab and line ends escaped (everything else, UTF-8 included, as is). */
function tsvText(s: string): string {
  if (!TSV_SPECIAL.test(s)) return s;
  return s.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

const NOT_ASCII = /[\u0080-\uffff]/;
const isAscii = (s: string) => !NOT_ASCII.test(s);

/** tsvText remembering the last string (rows of one asset repeat its id, label and market), and whether it is ASCII. */
function lastText(): { text: (s: string) => string; ascii: boolean } {
  let last = '';
  let escaped = '';
  const memo = {
    ascii: true,
    text: (s: string) => {
      if (s !== last) {
        last = s;
        escaped = tsvText(s);
        memo.ascii = isAscii(escaped);
      }
      return escaped;
    },
  };
  return memo;
}

/**
 * A time as DateTime64 text, `YYYY-MM-DD hh:mm:ss.fff` with `digits` decimals (t in ms: 3; local_t in
 * µs: 6), the date part remembered per second (rows come in time order). Not the number: the engine
 * reads a number in text by its digits (13 as ms, 5 as seconds, 4 as a year under best_effort; a
 * server's basic parser rejects 2000), in JSON by the column's scale.
 */
function timeText(digits: 3 | 6): { text: (ticks: number) => string } {
  const perSecond = 10 ** digits;
  let second = Number.NaN;
  let prefix = '';
  return {
    text: (ticks: number) => {
      const s = Math.floor(ticks / perSecond);
      if (!Number.isSafeInteger(ticks) || Math.abs(s) > 8.64e12) return String(ticks);
      if (s !== second) {
        second = s;
        prefix = new Date(s * 1000).toISOString().slice(0, 19).replace('T', ' ');
      }
      return `${prefix}.${String(ticks - s * perSecond).padStart(digits, '0')}`;
    },
  };
}

/** Levels as [price, size] pairs: a third of the bytes of named objects (see the insert settings). */
function levelPairs(levels: readonly Level[]): string {
  let out = '[';
  for (let i = 0; i < levels.length; i++) out += `${i ? ',' : ''}[${levels[i].price},${levels[i].size}]`;
  return `${out}]`;
}

/** The fee columns of `markets` (013_market_fees.sql), named as FeeFields names them. */
const FEE_COLUMNS = ['fees_enabled', 'taker_base_fee', 'maker_base_fee', 'fee_rate', 'fee_exponent', 'fee_taker_only', 'fee_rebate_rate'] as const;

/** Unknown trading rules are absent on a parsed row and NULL on a stored one: JSON writes both as null. */
function marketKey(r: MarketRow): string {
  const fees = FEE_COLUMNS.map((c) => r.fees?.[c] ?? null);
  return JSON.stringify([
    r.asset_id,
    r.market,
    r.outcome,
    r.question,
    r.slug,
    r.min_order_size ?? null,
    r.tick_size ?? null,
    r.neg_risk ?? null,
    ...fees,
    r.updated_at,
  ]);
}

function marketJson(r: MarketRow): string {
  const fees = FEE_COLUMNS.map((c) => `,"${c}":${r.fees?.[c] ?? null}`).join('');
  return (
    `{"asset_id":${JSON.stringify(r.asset_id)},"market":${JSON.stringify(r.market)},"outcome":${JSON.stringify(r.outcome)},` +
    `"question":${JSON.stringify(r.question)},"slug":${JSON.stringify(r.slug)},"min_order_size":${r.min_order_size ?? null},` +
    `"tick_size":${r.tick_size ?? null},"neg_risk":${r.neg_risk ?? null}${fees},"updated_at":${r.updated_at}}`
  );
}
