import { type CheckpointPolicy, DEFAULT_CHECKPOINTS, EMPTY_ASK, EMPTY_BID, type Level, levelsDiffering, OrderBook } from '../../book/index.js';
import type { MarketRow, SnapshotRow, TickRow } from '../../clickhouse/rows.js';
import { CAPTURE_EVENT_TYPE, parseCaptureRecord } from '../../ingest/capture-record.js';
import type { RowSink, SeqSource } from '../../ingest/normalizer.js';
import { RECEIVE_PREFIX_LENGTH, receiveTimeOf } from '../../ingest/receive-time.js';
import { isRecord } from '../../ingest/wire-values.js';
import { kalshiAssetId } from './ids.js';

/**
 * Kalshi's WebSocket v2 market-data messages → the rows the Polymarket normalizer writes (docs/KALSHI.md §2),
 * so every read path serves Kalshi unchanged:
 *
 * - `orderbook_snapshot` → a `book` tick + an exchange snapshot (+ its drift check): bids = the YES bids,
 *   asks = the NO bids at 1 − price;
 * - `orderbook_delta` → a `price_change` tick carrying the level's new absolute size (the previous size
 *   plus `delta_fp`, exact in hundredths; 0 or below removes the level) and the best bid/ask after it;
 * - `trade` → a `last_trade_price` tick at the YES price, size `count_fp`, taker side BUY (yes) / SELL (no) (takerOf), and
 *   Kalshi's `trade_id` in `tx_hash` (the column of Polymarket's transaction hash).
 *
 * Prices are held as integers of 1/10,000 dollar and counts as integers of 1/100 contract, so ladders are
 * exact; a row carries the nearest Float64. Per subscription (`sid`) the `seq` of orderbook messages must
 * rise by one: a gap stops the subscription (its later deltas are skipped) and is reported by takeGaps()
 * so the recorder records it and resubscribes; the fresh snapshot replaces the books.
 *
 * Times: a delta's `ts_ms` (else its RFC 3339 `ts`), a trade's `ts_ms` (else `ts` seconds); a snapshot carries
 * no time, so it takes its receive time (ms). Within a ticker `t` never goes back (a row's `t` is at least
 * the previous row's), so a snapshot stamped by our clock never hides the exchange-stamped deltas after it.
 * Pure and synchronous, like the Polymarket normalizer; capture records pass as there.
 */

export interface KalshiGap {
  sid: number;
  /** The seq expected and the one that came. */
  expected: number;
  got: number;
  /** tickhouse ids of the markets the subscription had delivered books for. */
  assets: string[];
}

export interface KalshiNormalizerOptions {
  seq: SeqSource;
  checkpoints?: CheckpointPolicy | false;
}

export interface KalshiNormalizerStats {
  lines: number;
  frames: number;
  captures: number;
  events: { orderbook_snapshot: number; orderbook_delta: number; trade: number; control: number; other: number };
  ticks: number;
  snapshots: number;
  checkpoints: number;
  markets: number;
  /** Deltas not applied: before the ticker's first snapshot, or on a subscription stopped by a seq gap. */
  skipped: number;
  gaps: number;
  malformed: number;
  malformedLines: number[];
}

interface Ladders {
  asset: string;
  /** YES bids and NO bids: price in 1/10,000 dollar → count in 1/100 contract, as Kalshi sent them. */
  yes: Map<number, number>;
  no: Map<number, number>;
  /** The same book as bids/asks (NO bid q → ask 1 − q), as the stored rows give it. */
  book: OrderBook | null;
  lastT: number;
  changes: number;
  snapshotT: number;
}

interface Subscription {
  lastSeq: number;
  assets: Set<string>;
  stopped: boolean;
}

const PRICE = /^(\d{1,4})(?:\.(\d{1,4}))?$/;
const COUNT = /^(-?)(\d{1,15})(?:\.(\d{1,2}))?$/;
const CONTROL = new Set(['subscribed', 'unsubscribed', 'ok', 'error', 'list_subscriptions']);
const MAX_MALFORMED_LINES = 10;

/** `"0.5600"` → 5600 (1/10,000 dollar); -1 when not a price in [0, 1] with at most 4 decimals. */
export function priceUnits(v: unknown): number {
  const m = typeof v === 'string' ? PRICE.exec(v) : null;
  if (!m) return -1;
  const units = Number(m[1]) * 10_000 + Number((m[2] ?? '').padEnd(4, '0'));
  return units <= 10_000 ? units : -1;
}

/** `"-54.00"` → -5400 (1/100 contract); NaN when not a count with at most 2 decimals. */
export function countUnits(v: unknown): number {
  const m = typeof v === 'string' ? COUNT.exec(v) : null;
  if (!m) return NaN;
  const units = Number(m[2]) * 100 + Number((m[3] ?? '').padEnd(2, '0'));
  return m[1] === '-' ? -units : units;
}

export class KalshiNormalizer {
  readonly stats: KalshiNormalizerStats = {
    lines: 0,
    frames: 0,
    captures: 0,
    events: { orderbook_snapshot: 0, orderbook_delta: 0, trade: 0, control: 0, other: 0 },
    ticks: 0,
    snapshots: 0,
    checkpoints: 0,
    markets: 0,
    skipped: 0,
    gaps: 0,
    malformed: 0,
    malformedLines: [],
  };
  private readonly markets = new Map<string, Ladders>();
  private readonly subscriptions = new Map<number, Subscription>();
  private readonly labels = new Map<string, string>();
  private readonly seq: SeqSource;
  private readonly policy: CheckpointPolicy | false;
  private lineNo = 0;
  private itemIndex = 0;
  private localT: number | undefined;
  /** The latest row time of the stream: a snapshot without a receive time takes it. */
  private streamT = -1;
  private gaps: KalshiGap[] = [];
  private lastMalformedLine = 0;

  constructor(
    private readonly sink: RowSink,
    options: KalshiNormalizerOptions,
  ) {
    this.seq = options.seq;
    this.policy = options.checkpoints ?? DEFAULT_CHECKPOINTS;
  }

  addMarkets(rows: readonly MarketRow[]): void {
    for (const row of rows) {
      this.labels.set(row.asset_id, row.outcome.toUpperCase());
      this.sink.market(row);
      this.stats.markets++;
    }
  }

  /** The current book of a market (bids = YES bids, asks = 1 − NO bids), once a snapshot started it. */
  book(assetId: string): OrderBook | undefined {
    return this.markets.get(assetId)?.book ?? undefined;
  }

  /** The seq gaps the lines pushed since the last call revealed, each once. */
  takeGaps(): KalshiGap[] {
    const gaps = this.gaps;
    this.gaps = [];
    return gaps;
  }

  /** One message exactly as received (optionally after its receive-time prefix), or a capture record. Never throws. */
  push(line: string, receivedAt?: number): void {
    this.lineNo++;
    this.itemIndex = 0;
    this.stats.lines++;
    let text = line.trim();
    if (text === '') return;
    const stamp = receiveTimeOf(text);
    if (stamp !== undefined) {
      if (Number.isNaN(stamp)) return this.malformed();
      text = text.slice(RECEIVE_PREFIX_LENGTH);
    }
    this.localT = stamp ?? receivedAt;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return this.malformed();
    }
    if (!isRecord(message)) return this.malformed();
    if (message.event_type === CAPTURE_EVENT_TYPE) return this.onCapture(message);
    this.stats.frames++;
    const type = message.type;
    const events = this.stats.events;
    if (type === 'orderbook_snapshot' || type === 'orderbook_delta') {
      events[type]++;
      const msg = message.msg;
      if (!isRecord(msg) || !Number.isSafeInteger(message.sid) || !Number.isSafeInteger(message.seq)) return this.malformed();
      if (!this.inSequence(message.sid as number, message.seq as number)) {
        this.stats.skipped++;
        return;
      }
      if (type === 'orderbook_snapshot') this.onSnapshot(message.sid as number, msg);
      else this.onDelta(msg);
    } else if (type === 'trade') {
      events.trade++;
      if (!isRecord(message.msg)) return this.malformed();
      this.onTrade(message.msg);
    } else if (typeof type === 'string' && CONTROL.has(type)) {
      events.control++;
      // A subscription starts its seq afresh; sids are numbered per connection, so a new connection reuses them.
      if (type === 'subscribed' && isRecord(message.msg) && Number.isSafeInteger(message.msg.sid)) this.subscriptions.delete(message.msg.sid as number);
    } else {
      events.other++;
    }
  }

  /** Checks a subscription's seq; false once the subscription has a gap (it is then stopped). */
  private inSequence(sid: number, seq: number): boolean {
    const s = this.subscriptions.get(sid);
    if (!s) {
      this.subscriptions.set(sid, { lastSeq: seq, assets: new Set(), stopped: false });
      return true;
    }
    if (s.stopped) return false;
    if (seq === s.lastSeq + 1) {
      s.lastSeq = seq;
      return true;
    }
    s.stopped = true;
    this.stats.gaps++;
    this.gaps.push({ sid, expected: s.lastSeq + 1, got: seq, assets: [...s.assets] });
    return false;
  }

  private onSnapshot(sid: number, msg: Record<string, unknown>): void {
    const ticker = msg.market_ticker;
    const yes = ladder(msg.yes_dollars_fp);
    const no = ladder(msg.no_dollars_fp);
    if (typeof ticker !== 'string' || !validTicker(ticker) || yes === null || no === null) return this.malformed();
    const asset = kalshiAssetId(ticker);
    const t = this.timeOf(asset, this.localT === undefined ? undefined : Math.floor(this.localT / 1000));
    if (t < 0) return this.malformed();
    this.subscriptions.get(sid)?.assets.add(asset);
    const m = this.ladders(asset);
    const book = bookOf(yes, no);
    // The drift check compares a book the deltas kept with the one Kalshi now states (unchecked at the first).
    const differing = m.book ? levelsDiffering(m.book, book) : -1;
    m.yes = yes;
    m.no = no;
    m.book = book;
    m.lastT = t;
    const seq = this.emitTick({
      asset_id: asset,
      t,
      event: 'book',
      best_bid: book.bestBid(),
      best_ask: book.bestAsk(),
      price: 0,
      size: 0,
      book_side: '',
      market: asset,
    });
    this.emitSnapshot(m, t, seq, 0);
    const verdict = differing < 0 ? 'unchecked' : differing === 0 ? 'verified' : 'drifted';
    this.sink.bookCheck({ asset_id: asset, t, seq, verdict, levels_differing: Math.max(0, differing) });
  }

  private onDelta(msg: Record<string, unknown>): void {
    const ticker = msg.market_ticker;
    const price = priceUnits(msg.price_dollars);
    const delta = countUnits(msg.delta_fp);
    const side = msg.side;
    const exchangeT = deltaTime(msg);
    if (typeof ticker !== 'string' || !validTicker(ticker) || price < 0 || Number.isNaN(delta) || (side !== 'yes' && side !== 'no') || Number.isNaN(exchangeT))
      return this.malformed();
    const asset = kalshiAssetId(ticker);
    const m = this.markets.get(asset);
    // A delta changes a level by an amount: without the snapshot it applies to, the level's size is unknown.
    if (!m?.book) {
      this.stats.skipped++;
      return;
    }
    const t = this.timeOf(asset, exchangeT ?? (this.localT === undefined ? undefined : Math.floor(this.localT / 1000)));
    if (t < 0) return this.malformed();
    const levels = side === 'yes' ? m.yes : m.no;
    const size = (levels.get(price) ?? 0) + delta;
    if (size > 0) levels.set(price, size);
    else levels.delete(price);
    const bid = side === 'yes';
    const bookPrice = (bid ? price : 10_000 - price) / 10_000;
    const bookSize = Math.max(0, size) / 100;
    m.book.apply(bid ? 'bid' : 'ask', bookPrice, bookSize);
    m.lastT = t;
    const seq = this.emitTick({
      asset_id: asset,
      t,
      event: 'price_change',
      best_bid: m.book.bestBid(),
      best_ask: m.book.bestAsk(),
      price: bookPrice,
      size: bookSize,
      book_side: bid ? 'BUY' : 'SELL',
      market: asset,
    });
    if (this.policy === false) return;
    m.changes++;
    if (m.changes >= this.policy.changes || t - m.snapshotT >= this.policy.ms) this.emitSnapshot(m, t, seq, 1);
  }

  private onTrade(msg: Record<string, unknown>): void {
    const ticker = msg.market_ticker;
    const price = priceUnits(msg.yes_price_dollars);
    const count = countUnits(msg.count_fp);
    const taker = takerOf(msg);
    const exchangeT = Number.isSafeInteger(msg.ts_ms) ? (msg.ts_ms as number) : Number.isSafeInteger(msg.ts) ? (msg.ts as number) * 1000 : -1;
    // Kalshi's id of the trade, kept in the column of Polymarket's transaction hash ('' when absent).
    const tradeId = msg.trade_id;
    if (tradeId !== undefined && tradeId !== null && typeof tradeId !== 'string') return this.malformed();
    if (typeof ticker !== 'string' || !validTicker(ticker) || price < 0 || !(count >= 0) || taker === undefined || exchangeT < 0) return this.malformed();
    const asset = kalshiAssetId(ticker);
    const t = this.timeOf(asset, exchangeT);
    const book = this.markets.get(asset)?.book;
    const [best_bid, best_ask] = book ? [book.bestBid(), book.bestAsk()] : [EMPTY_BID, EMPTY_ASK];
    this.emitTick({
      asset_id: asset,
      t,
      event: 'last_trade_price',
      best_bid,
      best_ask,
      price: price / 10_000,
      size: count / 100,
      book_side: taker === 'yes' ? 'BUY' : 'SELL',
      market: asset,
      ...(tradeId ? { tx_hash: tradeId } : {}),
    });
  }

  /** A row's `t`: the message's time, never before the ticker's previous row; -1 when no time is known. */
  private timeOf(asset: string, stated: number | undefined): number {
    const last = this.markets.get(asset)?.lastT ?? -1;
    const t = Math.max(stated ?? this.streamT, last);
    if (t >= 0) {
      const m = this.markets.get(asset);
      if (m) m.lastT = t;
      this.streamT = Math.max(this.streamT, t);
    }
    return t;
  }

  private ladders(asset: string): Ladders {
    let m = this.markets.get(asset);
    if (!m) {
      m = { asset, yes: new Map(), no: new Map(), book: null, lastT: -1, changes: 0, snapshotT: 0 };
      this.markets.set(asset, m);
    }
    return m;
  }

  private onCapture(e: Record<string, unknown>): void {
    const r = parseCaptureRecord(e);
    if (r === null) return this.malformed();
    this.stats.captures++;
    const seq = this.seq(this.lineNo, this.itemIndex++);
    const base = { t: r.t, seq, run: r.run, socket: r.socket, kind: r.kind };
    if (r.assets.length === 0) this.sink.capture({ asset_id: '', ...base });
    for (const asset_id of r.assets) this.sink.capture({ asset_id, ...base });
  }

  private emitTick(tick: Omit<TickRow, 'seq' | 'side'>): number {
    const seq = this.seq(this.lineNo, this.itemIndex++);
    const row: TickRow = { ...tick, seq, side: this.labels.get(tick.asset_id) ?? 'YES' };
    if (this.localT !== undefined) row.local_t = this.localT;
    this.sink.tick(row);
    this.stats.ticks++;
    return seq;
  }

  private emitSnapshot(m: Ladders, t: number, seq: number, is_checkpoint: 0 | 1): void {
    const book = m.book!;
    const row: SnapshotRow = { asset_id: m.asset, t, seq, is_checkpoint, market: m.asset, bids: book.levels('bid'), asks: book.levels('ask') };
    if (this.localT !== undefined) row.local_t = this.localT;
    this.sink.snapshot(row);
    if (is_checkpoint) this.stats.checkpoints++;
    else this.stats.snapshots++;
    m.changes = 0;
    m.snapshotT = t;
  }

  private malformed(): void {
    if (this.lastMalformedLine === this.lineNo) return;
    this.lastMalformedLine = this.lineNo;
    this.stats.malformed++;
    if (this.stats.malformedLines.length < MAX_MALFORMED_LINES) this.stats.malformedLines.push(this.lineNo);
  }
}

/**
 * A trade's taker side, yes | no (undefined when it states none or a bad one). Kalshi's "Order direction"
 * page: `taker_outcome_side` (yes | no) is canonical, `taker_book_side` the same bit (bid ≡ yes, ask ≡ no),
 * and `taker_side` the deprecated field they replace; the first one present is read.
 */
function takerOf(msg: Record<string, unknown>): 'yes' | 'no' | undefined {
  const side = msg.taker_outcome_side ?? (msg.taker_book_side === undefined ? msg.taker_side : BOOK_SIDE[String(msg.taker_book_side)]);
  return side === 'yes' || side === 'no' ? side : undefined;
}
const BOOK_SIDE: Record<string, 'yes' | 'no'> = { bid: 'yes', ask: 'no' };

function validTicker(ticker: string): boolean {
  return /^[A-Za-z0-9._-]{1,100}$/.test(ticker);
}

/** A snapshot side: absent = no levels; `[[price_dollars, count_fp], …]`, the last of a repeated price winning. */
function ladder(v: unknown): Map<number, number> | null {
  const out = new Map<number, number>();
  if (v === undefined || v === null) return out;
  if (!Array.isArray(v)) return null;
  for (const level of v) {
    if (!Array.isArray(level) || level.length !== 2) return null;
    const price = priceUnits(level[0]);
    const count = countUnits(level[1]);
    if (price < 0 || !(count >= 0)) return null;
    if (count > 0) out.set(price, count);
    else out.delete(price);
  }
  return out;
}

/** Bids = YES bids at their price; asks = NO bids at 1 − their price (exact in 1/10,000, then the nearest Float64). */
function bookOf(yes: Map<number, number>, no: Map<number, number>): OrderBook {
  const bids: Level[] = [...yes].map(([p, c]) => ({ price: p / 10_000, size: c / 100 }));
  const asks: Level[] = [...no].map(([p, c]) => ({ price: (10_000 - p) / 10_000, size: c / 100 }));
  return OrderBook.of(bids, asks);
}

/** A delta's exchange time in ms: `ts_ms`, else the RFC 3339 `ts`; undefined when it states none, NaN when one is invalid. */
function deltaTime(msg: Record<string, unknown>): number | undefined {
  if (msg.ts_ms !== undefined) return Number.isSafeInteger(msg.ts_ms) && (msg.ts_ms as number) >= 0 ? (msg.ts_ms as number) : NaN;
  if (msg.ts !== undefined) {
    const ms = typeof msg.ts === 'string' ? Date.parse(msg.ts) : NaN;
    return Number.isFinite(ms) && ms >= 0 ? ms : NaN;
  }
  return undefined;
}
