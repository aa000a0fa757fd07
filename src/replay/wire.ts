import type { BookState, Level } from '../book/index.js';
import type { MarketEventKind } from '../clickhouse/rows.js';
import { plainNumberText } from '../number-text.js';

/**
 * Stored rows in Polymarket's market-channel shapes (docs/TIME-MACHINE.md §1, docs/INGEST.md §1): every number
 * a string in shortest form, `timestamp` epoch ms as a string, book levels bids ascending and asks
 * descending (best level last) as the exchange lists them. We keep no exchange hash: `hash` is "". Market
 * events other than ticks (tick_size_change, best_bid_ask, market_resolved, new_market) are sent as received.
 */

/** The stored event types the replay reads: the ticks' three (ticks.event) and market_events' four. */
export type ReplayKind = 'price_change' | 'book' | 'last_trade_price' | MarketEventKind;

/** One stored event as the replay reads it (src/replay/store-read.ts). */
export type ReplayRow = [
  ms: number,
  seq: number,
  event: ReplayKind,
  assetId: string,
  market: string,
  bestBid: number,
  bestAsk: number,
  price: number,
  size: number,
  /** price_change: the book side it set; last_trade_price: the taker side ('' for rows ingested before it was kept). */
  side: '' | 'BUY' | 'SELL',
  /** book only: levels as stored (bids descending, asks ascending). */
  bids: Level[],
  asks: Level[],
  /** last_trade_price: the fee rate in basis points when stored, else null. */
  fee: number | null,
  /** last_trade_price: the transaction hash ('' when none is stored); a market event: its raw JSON. */
  text: string,
];

const MARKET_EVENT_KINDS: ReadonlySet<string> = new Set(['tick_size_change', 'best_bid_ask', 'market_resolved', 'new_market']);

/** A market_events row: sent as the event's JSON exactly as it was received (`raw`). */
export function isMarketEvent(kind: ReplayKind): kind is MarketEventKind {
  return MARKET_EVENT_KINDS.has(kind);
}

/** A number in the exchange's decimal text (shortest round-trip digits, never an exponent: src/number-text.ts). */
export const decimal = plainNumberText;

/**
 * The JSON text of a string, kept for the strings asked: a replay writes the same asset ids and
 * markets message after message, and JSON.stringify of a 78-character id was a quarter of the cost of
 * a price_change item. Kept by value, not only the last one: the messages of several assets
 * interleave (a Tardis day of 8 assets missed a last-string cache at nearly every item). Bounded:
 * emptied at QUOTED_KEPT strings. One for asset ids, one for markets.
 */
const QUOTED_KEPT = 10_000;

class QuotedText {
  private readonly texts = new Map<string, string>();

  of(s: string): string {
    let text = this.texts.get(s);
    if (text === undefined) {
      if (this.texts.size >= QUOTED_KEPT) this.texts.clear();
      text = JSON.stringify(s);
      this.texts.set(s, text);
    }
    return text;
  }
}

const assetText = new QuotedText();
const marketText = new QuotedText();

/** Stored and OrderBook levels are best first (bids descending, asks ascending); the wire lists them best last. */
function wireLevels(levels: readonly Level[]): string {
  let out = '[';
  for (let i = levels.length - 1; i >= 0; i--) {
    const l = levels[i];
    out += `${i === levels.length - 1 ? '' : ','}{"price":"${decimal(l.price)}","size":"${decimal(l.size)}"}`;
  }
  return `${out}]`;
}

function bookText(market: string, assetId: string, ms: number, bids: readonly Level[], asks: readonly Level[]): string {
  return (
    `{"event_type":"book","market":${marketText.of(market)},"asset_id":${assetText.of(assetId)},"timestamp":"${ms}","hash":"",` +
    `"bids":${wireLevels(bids)},"asks":${wireLevels(asks)}}`
  );
}

/** The `book` of a reconstructed state (the initial and subscribe-time arrays). */
export function bookOfState(assetId: string, state: BookState): string {
  return bookText(state.market, assetId, state.timestamp, state.book.levels('bid'), state.book.levels('ask'));
}

/** The array message of books sent on subscription. */
export function bookArray(books: string[]): string {
  return `[${books.join(',')}]`;
}

/** A stored `book` event. */
export function bookEvent(r: ReplayRow): string {
  return bookText(r[4], r[3], r[0], r[10], r[11]);
}

/**
 * A stored `last_trade_price`, with `fee_rate_bps` (a string, as on the wire) and `transaction_hash`
 * when they were stored.
 */
export function tradeEvent(r: ReplayRow): string {
  const fee = r[12] === null ? '' : `,"fee_rate_bps":"${r[12]}"`;
  const hash = r[13] === '' ? '' : `,"transaction_hash":${JSON.stringify(r[13])}`;
  return (
    `{"event_type":"last_trade_price","market":${marketText.of(r[4])},"asset_id":${assetText.of(r[3])},"price":"${decimal(r[7])}","side":"${r[9]}",` +
    `"size":"${decimal(r[8])}","timestamp":"${r[0]}"${fee}${hash}}`
  );
}

/** One item of a current-generation `price_change`. */
export function changeItem(r: ReplayRow): string {
  return (
    `{"asset_id":${assetText.of(r[3])},"price":"${decimal(r[7])}","size":"${decimal(r[8])}","side":"${r[9]}","best_bid":"${decimal(r[5])}",` +
    `"best_ask":"${decimal(r[6])}"}`
  );
}

/** A `price_change` message holding items of one market and one millisecond. */
export function priceChange(market: string, ms: number, items: string[]): string {
  return `{"event_type":"price_change","market":${marketText.of(market)},"timestamp":"${ms}","price_changes":[${items.join(',')}]}`;
}
