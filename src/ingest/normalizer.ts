import { createHash } from 'node:crypto';
import { type CheckpointPolicy, DEFAULT_CHECKPOINTS, EMPTY_ASK, EMPTY_BID, type Level, levelsDiffering, OrderBook } from '../book/index.js';
import type { BookCheckRow, CaptureRow, MarketEventRow, MarketRow, SnapshotRow, TickRow } from '../clickhouse/rows.js';
import { CAPTURE_EVENT_TYPE, parseCaptureRecord } from './capture-record.js';
import { parseNewMarket } from './gamma.js';
import { marketEventRows } from './market-events.js';
import { RECEIVE_PREFIX_LENGTH, receiveTimeOf } from './receive-time.js';
import { isRecord, num, optionalNum, time } from './wire-values.js';

/**
 * Raw market-channel frames → rows, exactly per docs/INGEST.md §2. Pure and synchronous: the live
 * recorder and the file replayer push the same text and get the same rows, so a recorded file
 * replays into what the recorder wrote.
 */

/** Receives rows in arrival order (the batch writer implements it). */
export interface RowSink {
  tick(row: TickRow): void;
  snapshot(row: SnapshotRow): void;
  market(row: MarketRow): void;
  /** A market-channel event that is not a tick (tick_size_change, best_bid_ask, market_resolved, new_market), per asset. */
  marketEvent(row: MarketEventRow): void;
  /** The drift check of every exchange `book`, after its tick and snapshot. */
  bookCheck(row: BookCheckRow): void;
  /** A recorder's capture record, once per asset it names (once with asset_id '' for `start`/`stop`). */
  capture(row: CaptureRow): void;
}

/**
 * Hands out `seq` for the next row: `lineNo` is the 1-based number of the pushed line, `itemIndex`
 * counts the ticks emitted so far from that line. Must increase with every call and stay < 2^53.
 */
export type SeqSource = (lineNo: number, itemIndex: number) => number;

export interface NormalizerOptions {
  seq: SeqSource;
  /** `false` stores no checkpoints. */
  checkpoints?: CheckpointPolicy | false;
}

export type EventKind = 'book' | 'price_change' | 'last_trade_price' | 'new_market' | 'market_resolved' | 'tick_size_change' | 'best_bid_ask' | 'unknown';

export interface NormalizerStats {
  /** Lines pushed, blank and `PONG` included. */
  lines: number;
  /** Lines that parsed as a JSON object or array (capture records excluded). */
  frames: number;
  /** Capture record lines (a recorder's archive holds them among the frames). */
  captures: number;
  pongs: number;
  /** Events seen per `event_type` (malformed ones included); unrecognised types under `unknown`. */
  events: Record<EventKind, number>;
  ticks: number;
  /** Exchange `book` snapshots. */
  snapshots: number;
  checkpoints: number;
  markets: number;
  /** market_events rows (one per asset a tick_size_change, best_bid_ask, market_resolved or new_market concerns). */
  marketEvents: number;
  /** Events of an unrecognised type (also counted in `events.unknown`). */
  unknown: number;
  /** Lines with bad JSON or at least one event missing or mangling a field. */
  malformed: number;
  /** Line numbers of the first 10 malformed lines. */
  malformedLines: number[];
}

/**
 * The replay seq: `base·2^40 + lineNo·2^12 + itemIndex`, with a 13-bit `base` hashed from
 * `sourceId`. The same source replayed gives the same seq values (so batch deduplication
 * recognises the rows), two sources rarely share a base, and a line with more than 4096 ticks
 * pushes the following values up instead of colliding with the next line.
 */
export function fileSeq(sourceId: string): SeqSource {
  const base = createHash('sha256').update(sourceId).digest().readUInt16BE(0) & 0x1fff;
  const offset = base * 2 ** 40;
  let last = -1;
  return (lineNo, itemIndex) => {
    last = Math.max(last + 1, offset + lineNo * 4096 + itemIndex);
    return last;
  };
}

interface AssetState {
  book: OrderBook | null;
  /** The book descends from a `book` event of this run, so it holds every level (checkpoints allowed). */
  grounded: boolean;
  market: string;
  /** price_change items applied since the last snapshot. */
  changes: number;
  /** Event time of the last snapshot. */
  snapshotT: number;
}

/** A tick as an event gives it: the normalizer adds `seq` and `side` (the outcome label). */
type TickFields = Omit<TickRow, 'seq' | 'side'>;

interface Change {
  asset: string;
  bid: boolean;
  price: number;
  size: number;
  bestBid: number | undefined;
  bestAsk: number | undefined;
}

const MAX_MALFORMED_LINES = 10;

export class Normalizer {
  readonly stats: NormalizerStats = {
    lines: 0,
    frames: 0,
    captures: 0,
    pongs: 0,
    events: { book: 0, price_change: 0, last_trade_price: 0, new_market: 0, market_resolved: 0, tick_size_change: 0, best_bid_ask: 0, unknown: 0 },
    ticks: 0,
    snapshots: 0,
    checkpoints: 0,
    markets: 0,
    marketEvents: 0,
    unknown: 0,
    malformed: 0,
    malformedLines: [],
  };
  private readonly assets = new Map<string, AssetState>();
  /** asset_id → outcome label upper-cased: the `side` of its ticks. */
  private readonly labels = new Map<string, string>();
  private readonly seq: SeqSource;
  private readonly policy: CheckpointPolicy | false;
  private lineNo = 0;
  private itemIndex = 0;
  /** Receive time of the frame being normalized (Unix µs), when known: every row of the frame gets it. */
  private localT: number | undefined;
  /** The text of the frame being normalized, when it is one event object: that event's raw JSON. */
  private frameText = '';
  private lastMalformedLine = 0;

  constructor(
    private readonly sink: RowSink,
    options: NormalizerOptions,
  ) {
    this.seq = options.seq;
    this.policy = options.checkpoints ?? DEFAULT_CHECKPOINTS;
  }

  /** Known metadata (e.g. from Gamma): labels the ticks that follow and passes the rows to the sink. */
  addMarkets(rows: readonly MarketRow[]): void {
    for (const row of rows) this.emitMarket(row);
  }

  /** The in-memory book of an asset, if a `book` or `price_change` started one. */
  book(assetId: string): OrderBook | undefined {
    return this.assets.get(assetId)?.book ?? undefined;
  }

  /**
   * One raw frame exactly as received: a line of a frame file, optionally prefixed with its receive
   * time (receive-time.ts), or a frame the recorder stamped on arrival (`receivedAt`, Unix µs). Never
   * throws on bad input.
   */
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
    if (text === 'PONG') {
      this.stats.pongs++;
      return;
    }
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      this.malformed();
      return;
    }
    if (isRecord(frame) && frame.event_type === CAPTURE_EVENT_TYPE) {
      this.onCapture(frame);
    } else if (Array.isArray(frame)) {
      this.stats.frames++;
      this.frameText = '';
      for (const event of frame) this.event(event);
    } else if (isRecord(frame)) {
      this.stats.frames++;
      this.frameText = text;
      this.event(frame);
    } else {
      this.malformed();
    }
  }

  private event(e: unknown): void {
    if (!isRecord(e) || typeof e.event_type !== 'string') return this.malformed();
    const events = this.stats.events;
    switch (e.event_type) {
      case 'book':
        events.book++;
        return this.onBook(e);
      case 'price_change':
        events.price_change++;
        return this.onPriceChange(e);
      case 'last_trade_price':
        events.last_trade_price++;
        return this.onTrade(e);
      case 'new_market':
        events.new_market++;
        return this.onNewMarket(e);
      case 'market_resolved':
      case 'tick_size_change':
      case 'best_bid_ask':
        events[e.event_type]++;
        return this.onMarketEvent(e);
      default:
        events.unknown++;
        this.stats.unknown++;
    }
  }

  private onBook(e: Record<string, unknown>): void {
    const asset = id(e.asset_id);
    const t = time(e.timestamp);
    const bids = levels(e.bids);
    const asks = levels(e.asks);
    if (asset === null || t < 0 || bids === null || asks === null) return this.malformed();
    const tickSize = optionalNum(e.tick_size);
    const lastTrade = optionalNum(e.last_trade_price);
    if (Number.isNaN(tickSize) || Number.isNaN(lastTrade)) return this.malformed();
    const state = this.state(asset);
    if (typeof e.market === 'string') state.market = e.market;
    const book = OrderBook.of(bids, asks);
    // The drift check compares only a grounded book: one started by price_change alone may lack
    // levels that no event of this run set, which is a hole in the input, not a disagreement.
    const differing = state.grounded ? levelsDiffering(state.book!, book) : -1;
    state.book = book;
    state.grounded = true;
    const [best_bid, best_ask] = [book.bestBid(), book.bestAsk()];
    const seq = this.emitTick({ asset_id: asset, t, event: 'book', best_bid, best_ask, price: 0, size: 0, book_side: '', market: state.market });
    this.emitSnapshot(state, { asset_id: asset, t, seq, is_checkpoint: 0 }, { tick_size: tickSize, last_trade_price: lastTrade });
    const verdict = differing < 0 ? 'unchecked' : differing === 0 ? 'verified' : 'drifted';
    this.sink.bookCheck({ asset_id: asset, t, seq, verdict, levels_differing: Math.max(0, differing) });
  }

  private onCapture(e: Record<string, unknown>): void {
    const r = parseCaptureRecord(e);
    if (r === null) return this.malformed();
    this.stats.captures++;
    // One seq per record: each asset appears once in it, and it orders the record among the ticks.
    const seq = this.seq(this.lineNo, this.itemIndex++);
    const base = { t: r.t, seq, run: r.run, socket: r.socket, kind: r.kind };
    if (r.assets.length === 0) this.sink.capture({ asset_id: '', ...base });
    for (const asset_id of r.assets) this.sink.capture({ asset_id, ...base });
  }

  private onPriceChange(e: Record<string, unknown>): void {
    const t = time(e.timestamp);
    if (t < 0) return this.malformed();
    // Parse every item before applying any, so a malformed event leaves no half-applied update.
    const changes: Change[] = [];
    if (Array.isArray(e.price_changes)) {
      for (const item of e.price_changes) {
        const c = isRecord(item) ? change(item, item.asset_id ?? e.asset_id) : null;
        if (c === null) return this.malformed();
        changes.push(c);
      }
    } else if (Array.isArray(e.changes)) {
      for (const item of e.changes) {
        const c = isRecord(item) ? change(item, e.asset_id) : null;
        if (c === null) return this.malformed();
        changes.push(c);
      }
    } else {
      const c = change(e, e.asset_id);
      if (c === null) return this.malformed();
      changes.push(c);
    }
    const market = typeof e.market === 'string' ? e.market : null;
    for (const c of changes) this.applyChange(c, t, market);
  }

  private applyChange(c: Change, t: number, market: string | null): void {
    const state = this.state(c.asset);
    if (market !== null) state.market = market;
    // A book started by price_change alone is not grounded: it may lack levels an earlier file knew.
    const book = (state.book ??= new OrderBook());
    book.apply(c.bid ? 'bid' : 'ask', c.price, c.size);
    const seq = this.emitTick({
      asset_id: c.asset,
      t,
      event: 'price_change',
      best_bid: c.bestBid ?? book.bestBid(),
      best_ask: c.bestAsk ?? book.bestAsk(),
      price: c.price,
      size: c.size,
      book_side: c.bid ? 'BUY' : 'SELL',
      market: state.market,
    });
    if (!state.grounded || this.policy === false) return;
    state.changes++;
    if (state.changes >= this.policy.changes || t - state.snapshotT >= this.policy.ms)
      this.emitSnapshot(state, { asset_id: c.asset, t, seq, is_checkpoint: 1 });
  }

  private onTrade(e: Record<string, unknown>): void {
    const asset = id(e.asset_id);
    const t = time(e.timestamp);
    const price = num(e.price);
    const size = num(e.size);
    if (asset === null || t < 0 || price < 0 || size < 0) return this.malformed();
    // A trade alone creates no book: read the current one without adding state.
    const state = this.assets.get(asset);
    const book = state?.book;
    const market = typeof e.market === 'string' ? e.market : (state?.market ?? '');
    // The taker side Polymarket sent, kept for the replay and the CLOB-compatible last trade price.
    const taker = e.side === 'BUY' || e.side === 'SELL' ? e.side : '';
    const fee = optionalNum(e.fee_rate_bps);
    if (fee !== undefined && !(Number.isInteger(fee) && fee <= 0xffff)) return this.malformed();
    const hash = e.transaction_hash;
    if (hash !== undefined && hash !== null && typeof hash !== 'string') return this.malformed();
    const [best_bid, best_ask] = book ? [book.bestBid(), book.bestAsk()] : [EMPTY_BID, EMPTY_ASK];
    const tick: TickFields = { asset_id: asset, t, event: 'last_trade_price', best_bid, best_ask, price, size, book_side: taker, market };
    if (fee !== undefined) tick.fee_rate_bps = fee;
    if (hash) tick.tx_hash = hash;
    this.emitTick(tick);
  }

  private onNewMarket(e: Record<string, unknown>): void {
    const t = time(e.timestamp);
    const rows = t < 0 ? null : parseNewMarket(e, t);
    if (rows === null) return this.malformed();
    // Both parse: a new_market that yields no market_events rows (bad fees) leaves no market rows either.
    const events = marketEventRows(e, t, this.rawOf(e));
    if (events === null) return this.malformed();
    for (const row of rows) this.emitMarket(row);
    this.emitMarketEvents(events);
  }

  private onMarketEvent(e: Record<string, unknown>): void {
    const t = time(e.timestamp);
    const rows = t < 0 ? null : marketEventRows(e, t, this.rawOf(e));
    if (rows === null) return this.malformed();
    this.emitMarketEvents(rows);
  }

  /** The event's JSON as received: the frame's text when the frame is this one object, else the event re-serialized. */
  private rawOf(e: Record<string, unknown>): string {
    return this.frameText !== '' ? this.frameText : JSON.stringify(e);
  }

  /** The rows of one event, each asset's, under one seq (the event arrived once). */
  private emitMarketEvents(rows: MarketEventRow[]): void {
    const seq = this.seq(this.lineNo, this.itemIndex++);
    for (const row of rows) {
      row.seq = seq;
      if (this.localT !== undefined) row.local_t = this.localT;
      const state = this.assets.get(row.asset_id);
      if (row.market === '' && state) row.market = state.market;
      this.sink.marketEvent(row);
    }
    this.stats.marketEvents += rows.length;
  }

  /** Passes a tick on with the next seq and its asset's outcome label as `side`; returns the seq. */
  private emitTick(tick: TickFields): number {
    const seq = this.seq(this.lineNo, this.itemIndex++);
    const { asset_id, t, event, best_bid, best_ask, price, size, book_side, market } = tick;
    const side = this.labels.get(asset_id) ?? 'UNKNOWN';
    const row: TickRow = { asset_id, t, seq, event, side, best_bid, best_ask, price, size, book_side, market };
    if (this.localT !== undefined) row.local_t = this.localT;
    if (tick.fee_rate_bps !== undefined) row.fee_rate_bps = tick.fee_rate_bps;
    if (tick.tx_hash !== undefined) row.tx_hash = tick.tx_hash;
    this.sink.tick(row);
    this.stats.ticks++;
    return seq;
  }

  /** `stated`: what an exchange book says besides its levels (absent members stay absent). */
  private emitSnapshot(
    state: AssetState,
    key: Pick<SnapshotRow, 'asset_id' | 't' | 'seq' | 'is_checkpoint'>,
    stated: Pick<SnapshotRow, 'tick_size' | 'last_trade_price'> = {},
  ): void {
    const book = state.book!;
    const { asset_id, t, seq, is_checkpoint } = key;
    const row: SnapshotRow = { asset_id, t, seq, is_checkpoint, market: state.market, bids: book.levels('bid'), asks: book.levels('ask') };
    if (this.localT !== undefined) row.local_t = this.localT;
    if (stated.tick_size !== undefined) row.tick_size = stated.tick_size;
    if (stated.last_trade_price !== undefined) row.last_trade_price = stated.last_trade_price;
    this.sink.snapshot(row);
    if (is_checkpoint) this.stats.checkpoints++;
    else this.stats.snapshots++;
    state.changes = 0;
    state.snapshotT = t;
  }

  private emitMarket(row: MarketRow): void {
    this.labels.set(row.asset_id, row.outcome.toUpperCase());
    this.sink.market(row);
    this.stats.markets++;
  }

  private state(asset: string): AssetState {
    let s = this.assets.get(asset);
    if (!s) {
      s = { book: null, grounded: false, market: '', changes: 0, snapshotT: 0 };
      this.assets.set(asset, s);
    }
    return s;
  }

  private malformed(): void {
    if (this.lastMalformedLine === this.lineNo) return;
    this.lastMalformedLine = this.lineNo;
    this.stats.malformed++;
    if (this.stats.malformedLines.length < MAX_MALFORMED_LINES) this.stats.malformedLines.push(this.lineNo);
  }
}

/** A price_change item, or null when a field is missing or not a number. */
function change(item: Record<string, unknown>, assetId: unknown): Change | null {
  const asset = id(assetId);
  const price = num(item.price);
  const size = num(item.size);
  const side = item.side;
  const bestBid = optionalNum(item.best_bid);
  const bestAsk = optionalNum(item.best_ask);
  if (asset === null || price < 0 || size < 0 || (side !== 'BUY' && side !== 'SELL') || Number.isNaN(bestBid) || Number.isNaN(bestAsk)) return null;
  return { asset, bid: side === 'BUY', price, size, bestBid, bestAsk };
}

function id(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

function levels(v: unknown): Level[] | null {
  if (!Array.isArray(v)) return null;
  const out: Level[] = [];
  for (const l of v) {
    if (!isRecord(l)) return null;
    const price = num(l.price);
    const size = num(l.size);
    if (price < 0 || size < 0) return null;
    out.push({ price, size });
  }
  return out;
}
