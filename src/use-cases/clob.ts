import type { BooksInWindow } from '../auth/book-in-window.js';
import { assertInWindow, type HistoryWindow } from '../auth/history-window.js';
import type { BookState } from '../book/index.js';
import type { Engine } from '../clickhouse/engine.js';
import type { TradingRules } from '../clob/book-summary.js';
import { type BookSummary, bookSummary, decimalText } from '../clob/book-summary.js';
import { type Instrument, type MarketMetadata, tradingRulesAt } from '../instruments/instrument.js';
import { lastTradeAt, marketMetadata } from '../queries/clob.js';
import { tradingHistoryAt } from '../queries/instruments.js';
import { readInstrument } from './instruments.js';

/** Books of a batch read at once (the engine pool runs a few queries at a time). */
const BOOKS_IN_FLIGHT = 8;

/**
 * What Polymarket's CLOB read API answers at an instant besides the book itself (docs/TIME-MACHINE.md
 * §2, §5): a book summary's trading rules and last trade price, a token's last trade, the books of a
 * batch, the instrument behind the market calls. One per request: its reads are cancelled with it and
 * checked against its plan's window; routes/clob.ts puts the answers into Polymarket's shapes.
 */
export class ClobReads {
  constructor(
    private readonly engine: Engine,
    private readonly window: HistoryWindow,
    private readonly now: () => number,
    private readonly signal?: AbortSignal,
  ) {}

  /** The summary of a book: rules and last trade price as of the instant, history first, then metadata, then defaults. */
  async summary(token: string, state: BookState, at: number | null, meta: Map<string, MarketMetadata>): Promise<BookSummary> {
    const trading = await tradingHistoryAt(this.engine, token, at, this.signal);
    return bookSummary(token, state, tradingRulesAt(trading, meta.get(token)), trading.lastTrade?.value ?? null);
  }

  /** Gamma's metadata of these tokens (a summary's fallbacks). */
  metadata(tokens: string[]): Promise<Map<string, MarketMetadata>> {
    return marketMetadata(this.engine, tokens, this.signal);
  }

  /** Tick size, minimum order and neg-risk in force at the instant. */
  async rules(token: string, at: number | null): Promise<TradingRules> {
    const [trading, meta] = await Promise.all([tradingHistoryAt(this.engine, token, at, this.signal), this.metadata([token])]);
    return tradingRulesAt(trading, meta.get(token));
  }

  /**
   * The last trade of a token at the reader's instant with its taker side; without a stored trade, the last
   * exchange book's own last_trade_price (side unknown), else Polymarket's answer for a token without
   * trades; null when the token has neither a trade nor a book then.
   */
  async lastTrade(reader: BooksInWindow, token: string): Promise<{ price: string; side: 'BUY' | 'SELL' | '' } | null> {
    const trade = await lastTradeAt(this.engine, token, reader.at, this.signal);
    if (trade) {
      if (reader.at === null) assertInWindow(this.window, trade.timestamp);
      return { price: decimalText(trade.price), side: trade.side };
    }
    if (!(await reader.find(token))) return null;
    const stated = (await tradingHistoryAt(this.engine, token, reader.at, this.signal)).lastTrade;
    return { price: stated ? decimalText(stated.value) : '0.5', side: '' };
  }

  /**
   * The books of a batch's tokens (each read once, BOOKS_IN_FLIGHT at a time) that have one at the
   * instant, in request order: an answer keyed by token lists them as they were asked for.
   */
  async books(reader: BooksInWindow, tokens: readonly string[]): Promise<Map<string, BookState>> {
    const unique = [...new Set(tokens)];
    const states: (BookState | null)[] = [];
    for (let i = 0; i < unique.length; i += BOOKS_IN_FLIGHT)
      states.push(...(await Promise.all(unique.slice(i, i + BOOKS_IN_FLIGHT).map((t) => reader.find(t)))));
    const found = new Map<string, BookState>();
    unique.forEach((token, i) => {
      const state = states[i];
      if (state) found.set(token, state);
    });
    return found;
  }

  /** The summaries of a batch's tokens that have a book at the instant, in request order (a token listed twice, twice). */
  async summaries(reader: BooksInWindow, tokens: readonly string[]): Promise<BookSummary[]> {
    // A token listed twice is read once.
    const unique = [...new Set(tokens)];
    const meta = await this.metadata(unique);
    const summaries = new Map<string, BookSummary>();
    for (let i = 0; i < unique.length; i += BOOKS_IN_FLIGHT) {
      await Promise.all(
        unique.slice(i, i + BOOKS_IN_FLIGHT).map(async (token) => {
          const state = await reader.find(token);
          if (state) summaries.set(token, await this.summary(token, state, reader.at, meta));
        }),
      );
    }
    return tokens.flatMap((token) => summaries.get(token) ?? []);
  }

  /** The instrument of a token at the reader's instant (now for `latest`): one whose book exists is always known. */
  instrument(token: string, at: number | null): Promise<Instrument> {
    return readInstrument(this.engine, token, at ?? this.now(), this.signal);
  }
}
