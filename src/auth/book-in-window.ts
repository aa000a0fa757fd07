import type { Context } from 'hono';
import type { BookAt, BookReader } from '../book-history/port.js';
import type { AppEnv } from '../http/context.js';
import { notFound } from '../http/errors.js';
import { assertInWindow, type HistoryWindow, windowOf } from './history-window.js';

/**
 * Books as the plan's history window (docs/API.md §2) lets this request read them: the one place that
 * puts the window in front of a BookReader, for `/v1/orderbook`, `/v1/price`, `/v1/execution-price` and
 * the Polymarket-compatible endpoints (docs/TIME-MACHINE.md §2).
 *
 * Made at the start of a handler with the request's instant (null = latest), before anything is read:
 * an explicit instant before the window is a 403 `data_access_denied` whatever the route reads next
 * (an empty `POST /books` too). A latest book is read first, then must lie in the window itself: no
 * book is the route's 404, a book whose newest event is older than the window the same 403.
 */
export function booksInWindow(c: Context<AppEnv>, books: BookReader, at: number | null): BooksInWindow {
  return booksIn(windowOf(c), books, at, c.req.raw.signal);
}

/** The same for a caller without a Hono context (the MCP tools): its window and the signal that cancels its reads. */
export function booksIn(window: HistoryWindow, books: BookReader, at: number | null, signal?: AbortSignal): BooksInWindow {
  if (at !== null) assertInWindow(window, at);
  const find = async (assetId: string) => {
    const state = await books.at(assetId, at, signal);
    if (state && at === null) assertInWindow(window, state.timestamp);
    return state;
  };
  return {
    at,
    find,
    async get(assetId, missing) {
      const state = await find(assetId);
      if (!state) throw notFound(missing);
      return state;
    },
  };
}

export interface BooksInWindow {
  /** The instant of every read (Unix ms; null = latest), already checked against the window. */
  readonly at: number | null;
  /** The book of `assetId`, or null when it has none then (`POST /books` leaves such a token out). */
  find(assetId: string): Promise<BookAt | null>;
  /** The book of `assetId`; none is a 404 with `missing`, in each API's own words. */
  get(assetId: string, missing: string): Promise<BookAt>;
}
