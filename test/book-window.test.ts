import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { type DataApp, startDataApp } from './support/data-app.js';

/**
 * The plan's history window (docs/API.md §2) on every route that reads a point-in-time book: the
 * three `/v1` ones and the Polymarket-compatible ones (docs/TIME-MACHINE.md §2), `POST /books`
 * included. A free key reads from today's 00:00 UTC: an explicit instant before that is a 403, and
 * so is `latest` when the newest data is older. The unlimited key reads the same requests, so each
 * 403 is the window and nothing else. A book that does not exist is each API's own 404 (left out by
 * `POST /books`), answered before the time of a latest book can be judged.
 */
const DAY = 86_400_000;
const D = Date.UTC(2026, 5, 24); // 00:00 UTC of the day of the data
const H = 3_600_000;
const A = '111'; // a book from the evening before D, updated at D 10:00; no trade
const T = '222'; // trades only: D − 1 h and D 10:00 (the last-trade-price path that finds a trade)
const NONE = '999'; // nothing at all

const frames = [
  {
    event_type: 'book',
    asset_id: A,
    market: '0xa',
    timestamp: String(D - 2 * H),
    hash: 'h',
    bids: [{ price: '0.40', size: '10' }],
    asks: [{ price: '0.60', size: '10' }],
  },
  { event_type: 'last_trade_price', asset_id: T, market: '0xt', price: '0.3', side: 'BUY', size: '1', fee_rate_bps: '0', timestamp: String(D - H) },
  {
    event_type: 'price_change',
    market: '0xa',
    timestamp: String(D + 10 * H),
    price_changes: [{ asset_id: A, price: '0.45', size: '5', side: 'BUY', hash: 'h', best_bid: '0.45', best_ask: '0.6' }],
  },
  { event_type: 'last_trade_price', asset_id: T, market: '0xt', price: '0.35', side: 'SELL', size: '2', fee_rate_bps: '0', timestamp: String(D + 10 * H) },
].map((f) => JSON.stringify(f));

let d: DataApp;
beforeAll(async () => {
  d = await startDataApp(D + 12 * H);
  const summary = await replayLines(d.te.engine, frames, { sourceId: 'book-window' });
  expect(summary.normalizer.malformed).toBe(0);
}, 60_000);
afterAll(() => d?.close());

interface Answer {
  status: number;
  body: unknown;
}
async function send(path: string, init: RequestInit = {}): Promise<Answer> {
  const res = await d.app.request(path, init);
  return { status: res.status, body: await res.json() };
}

const v1 =
  (path: string, extra = '') =>
  (key: string, asset: string, at: number | null) =>
    send(`${path}?asset_id=${asset}${at === null ? '' : `&timestamp=${at}`}${extra}`, { headers: { authorization: `Bearer ${key}` } });
const clobBase = (key: string, at: number | null) => `/v1/clob/${key}/at/${at ?? 'latest'}`;
const clob =
  (path: string, extra = '') =>
  (key: string, asset: string, at: number | null) =>
    send(`${clobBase(key, at)}/${path}?token_id=${asset}${extra}`);
const books = (key: string, asset: string, at: number | null) =>
  send(`${clobBase(key, at)}/books`, { method: 'POST', body: JSON.stringify([{ token_id: asset }]), headers: { 'content-type': 'application/json' } });

const MESSAGE = 'Your plan (free) only allows access to the last 0 day(s) of data.';
const v1Denied = (earliest: string) => ({
  status: 403,
  body: { detail: { error: 'data_access_denied', message: MESSAGE, plan: 'free', earliest_allowed: earliest } },
});
const clobDenied = { status: 403, body: { error: MESSAGE } };
const v1Missing = (asset: string, at: number | null) => ({
  status: 404,
  body: { detail: { message: at === null ? `No order book for asset ${asset}.` : `No order book for asset ${asset} at or before ${at}.` } },
});
const clobMissing = (error: string) => () => ({ status: 404, body: { error } });
const NO_BOOK = clobMissing('No orderbook exists for the requested token id');
const NO_MARKET = clobMissing('market not found');

interface Route {
  name: string;
  call(key: string, asset: string, at: number | null): Promise<Answer>;
  /** The 403 of the free key whose window starts at `earliest` (ISO). */
  denied(earliest: string): Answer;
  /** The answer for an asset without a book at `at`. */
  missing(asset: string, at: number | null): Answer;
  /** The asset read (default A). */
  asset?: string;
  /** false: the route has no `latest` (a timestamp is required). */
  latest?: false;
}
const ROUTES: Route[] = [
  { name: 'GET /v1/orderbook', call: v1('/v1/orderbook'), denied: v1Denied, missing: v1Missing },
  { name: 'GET /v1/price', call: v1('/v1/price'), denied: v1Denied, missing: v1Missing },
  { name: 'GET /v1/execution-price', call: v1('/v1/execution-price', '&side=BUY&amount=1'), denied: v1Denied, missing: v1Missing, latest: false },
  { name: 'clob GET /book', call: clob('book'), denied: () => clobDenied, missing: NO_BOOK },
  { name: 'clob POST /books', call: books, denied: () => clobDenied, missing: () => ({ status: 200, body: [] }) },
  { name: 'clob GET /price', call: clob('price', '&side=SELL'), denied: () => clobDenied, missing: NO_BOOK },
  { name: 'clob GET /midpoint', call: clob('midpoint'), denied: () => clobDenied, missing: NO_BOOK },
  { name: 'clob GET /spread', call: clob('spread'), denied: () => clobDenied, missing: NO_BOOK },
  { name: 'clob GET /tick-size', call: clob('tick-size'), denied: () => clobDenied, missing: NO_MARKET },
  { name: 'clob GET /neg-risk', call: clob('neg-risk'), denied: () => clobDenied, missing: NO_MARKET },
  { name: 'clob GET /last-trade-price (no trade: the book fallback)', call: clob('last-trade-price'), denied: () => clobDenied, missing: NO_BOOK },
  { name: 'clob GET /last-trade-price (a trade)', call: clob('last-trade-price'), denied: () => clobDenied, missing: NO_BOOK, asset: T },
];
const withLatest = ROUTES.filter((r) => r.latest !== false);

describe('a free key on the day of the data (window from D 00:00 UTC)', () => {
  it.each(ROUTES)('$name: an explicit instant 1 ms before the window is a 403; at its first instant the book is read', async (route) => {
    d.clock.set(D + 12 * H);
    const free = await d.keyFor('free');
    const asset = route.asset ?? A;
    expect(await route.call(free, asset, D - 1)).toEqual(route.denied('2026-06-24T00:00:00+00:00'));
    // The unlimited key reads a book there: the 403 is the window.
    expect((await route.call(d.key, asset, D - 1)).status).toBe(200);
    const boundary = await route.call(free, asset, D);
    expect(boundary).toEqual(await route.call(d.key, asset, D));
    expect(boundary.status).toBe(200);
  });

  it.each(withLatest)('$name: latest, whose newest data is in the window, is read', async (route) => {
    d.clock.set(D + 12 * H);
    const free = await d.keyFor('free');
    const asset = route.asset ?? A;
    const latest = await route.call(free, asset, null);
    expect(latest).toEqual(await route.call(d.key, asset, null));
    expect(latest.status).toBe(200);
  });
});

describe('a free key the day after (window from D + 1 day): the newest data is older than the window', () => {
  it.each(withLatest)('$name: latest is a 403', async (route) => {
    d.clock.set(D + DAY + 12 * H);
    const free = await d.keyFor('free');
    const asset = route.asset ?? A;
    expect(await route.call(free, asset, null)).toEqual(route.denied('2026-06-25T00:00:00+00:00'));
    expect((await route.call(d.key, asset, null)).status).toBe(200);
  });

  it.each(ROUTES)('$name: the instant of the newest event is a 403', async (route) => {
    d.clock.set(D + DAY + 12 * H);
    const free = await d.keyFor('free');
    const asset = route.asset ?? A;
    expect(await route.call(free, asset, D + 10 * H)).toEqual(route.denied('2026-06-25T00:00:00+00:00'));
    expect((await route.call(d.key, asset, D + 10 * H)).status).toBe(200);
  });
});

describe('no book', () => {
  it.each(ROUTES)('$name: each API’s 404 inside the window and for latest; an explicit instant before the window is still a 403', async (route) => {
    d.clock.set(D + DAY + 12 * H);
    const free = await d.keyFor('free');
    expect(await route.call(free, NONE, D + DAY)).toEqual(route.missing(NONE, D + DAY));
    if (route.latest !== false) expect(await route.call(free, NONE, null)).toEqual(route.missing(NONE, null));
    expect(await route.call(free, NONE, D + DAY - 1)).toEqual(route.denied('2026-06-25T00:00:00+00:00'));
  });
});
