import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { Chain, ClobClient, type MarketPrice, type OrderBookSummary, PriceHistoryInterval, Side } from '@polymarket/clob-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { type FrameStream, generateFrames } from './support/book-frames.js';
import { BookModel } from './support/book-model.js';
import { type DataApp, startDataApp } from './support/data-app.js';

/**
 * Polymarket's own TypeScript client (`@polymarket/clob-client`, unmodified, from npm) pointed at
 * `/v1/clob/{key}/at/{instant}` of a real listening server: every read method returns without error
 * and equals the `/v1` answer for the same instant. The stream is the generated one of the order
 * book tests (bursts of equal timestamps, empty sides, trades, a trade-only asset).
 */
let d: DataApp;
let server: ServerType;
let origin: string;
let stream: FrameStream;
const model = new BookModel();
/** Every last_trade_price frame, in arrival order: the reference for the last trade. */
const trades: { asset: string; t: number; price: string; side: string }[] = [];

beforeAll(async () => {
  stream = generateFrames(20261124, 1500);
  for (const line of stream.lines) {
    model.push(line);
    if (line.startsWith('{') && line.includes('"last_trade_price"')) {
      const f = JSON.parse(line);
      trades.push({ asset: f.asset_id, t: Number(f.timestamp), price: f.price, side: f.side });
    }
  }
  d = await startDataApp(stream.end + 86_400_000);
  // Gamma metadata for one market (its two tokens): the other assets get Polymarket's defaults.
  const gamma = [
    {
      conditionId: '0xaaa1',
      question: 'Q?',
      slug: 'q',
      outcomes: '["Yes","No"]',
      clobTokenIds: '["1001","1002"]',
      orderMinSize: 15,
      orderPriceMinTickSize: 0.001,
      negRisk: true,
    },
  ];
  const summary = await replayLines(d.te.engine, stream.lines, { sourceId: 'clob-client', markets: gamma, checkpoints: { changes: 25, ms: 60_000 } });
  expect(summary.normalizer.malformed).toBe(0);
  server = serve({ fetch: d.app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await d?.close();
});

const client = (instant: number | 'latest', throwOnError = false) =>
  new ClobClient(
    `${origin}/v1/clob/${d.key}/at/${instant}`,
    Chain.POLYGON,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    throwOnError,
  );

async function v1(path: string) {
  const res = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${d.key}` } });
  return { status: res.status, body: await res.json() };
}

/** Instants per asset: inside bursts (at an event, 1 ms before one), between events, and latest. */
function instantsOf(asset: string): number[] {
  const times = model.times(asset);
  const picks = [0.1, 0.35, 0.6, 0.85].map((f) => times[Math.floor(f * (times.length - 1))]);
  const burst = times.find((t, i) => i > 0 && times[i - 1] === t) ?? times[1];
  return [...new Set([burst, burst - 1, ...picks, picks[1] + 1, stream.end + 1000])];
}

/** The client declares `MarketPrice[]`, but hands back what the server sends: Polymarket's `{"history": [...]}`. */
const history = (answer: MarketPrice[]) => answer as unknown as { history: MarketPrice[] };

const rules = (asset: string) =>
  asset === '1001' || asset === '1002'
    ? { min_order_size: '15', tick_size: '0.001', neg_risk: true }
    : { min_order_size: '5', tick_size: '0.01', neg_risk: false };
/**
 * The tick size at an instant (`null`: latest), as docs/TIME-MACHINE.md §5 orders its sources; the
 * stream states it only in tick_size_change frames: the newest up to the instant, else the old tick of
 * the first one after it, else the market's metadata.
 */
function tickSizeAt(asset: string, at: number | null): string {
  const changes = stream.lines
    .filter((line) => line.includes('"tick_size_change"'))
    .map((line) => JSON.parse(line) as { asset_id: string; timestamp: string; old_tick_size: string; new_tick_size: string })
    .filter((e) => e.asset_id === asset);
  const before = changes.filter((e) => at === null || Number(e.timestamp) <= at).at(-1);
  if (before) return before.new_tick_size;
  return changes.find((e) => Number(e.timestamp) > (at ?? Number.POSITIVE_INFINITY))?.old_tick_size ?? rules(asset).tick_size;
}
const asNumbers = (levels: { price: string; size: string }[]) => levels.map((l) => ({ price: Number(l.price), size: Number(l.size) }));

/** The book methods of one client at one instant against /v1/orderbook and /v1/price. */
async function checkBook(c: ClobClient, asset: string, at: number | null) {
  const ts = at === null ? '' : `&timestamp=${at}`;
  const book = await v1(`/v1/orderbook?asset_id=${asset}&limit=100${ts}`);
  const price = await v1(`/v1/price?asset_id=${asset}${ts}`);
  expect(book.status).toBe(200);
  const v1Book = book.body.data;
  expect(v1Book.bids.length).toBeLessThan(100);
  expect(v1Book.asks.length).toBeLessThan(100);

  const summary = (await c.getOrderBook(asset)) as OrderBookSummary & { error?: unknown };
  expect(summary.error).toBeUndefined();
  expect(summary).toMatchObject({
    market: v1Book.market,
    asset_id: asset,
    timestamp: String(v1Book.timestamp),
    ...rules(asset),
    tick_size: tickSizeAt(asset, at),
  });
  // Polymarket lists the best level last on both sides; /v1 lists it first.
  expect(asNumbers(summary.bids).reverse()).toEqual(v1Book.bids);
  expect(asNumbers(summary.asks).reverse()).toEqual(v1Book.asks);
  expect(await c.getOrderBookHash({ ...summary })).toBe(summary.hash);
  const trade = trades.filter((t) => t.asset === asset && t.t <= (at ?? Infinity)).at(-1);
  expect(summary.last_trade_price).toBe(trade ? String(Number(trade.price)) : '');

  const q = price.body.data;
  expect(await c.getPrice(asset, Side.BUY)).toEqual({ price: q.best_bid });
  expect(await c.getPrice(asset, Side.SELL)).toEqual({ price: q.best_ask });
  expect(await c.getMidpoint(asset)).toEqual({ mid: String(q.midpoint) });
  expect(await c.getSpread(asset)).toEqual({ spread: String(q.spread) });
  expect(await c.getTickSize(asset)).toBe(tickSizeAt(asset, at));
  expect(await c.getNegRisk(asset)).toBe(rules(asset).neg_risk);
  return summary;
}

describe('@polymarket/clob-client against the time machine', () => {
  it('book, price, midpoint, spread, tick size and neg risk equal /v1 at instants inside bursts, between events and latest', async () => {
    let checked = 0;
    for (const asset of stream.assets) {
      for (const at of instantsOf(asset)) {
        await checkBook(client(at), asset, at);
        checked++;
      }
      await checkBook(client('latest'), asset, null);
    }
    expect(checked).toBeGreaterThan(25);
  }, 120_000);

  it('getOrderBooks equals one getOrderBook per token, tokens without a book left out', async () => {
    for (const at of [stream.start + Math.floor((stream.end - stream.start) / 2), stream.end]) {
      const c = client(at);
      const tokens = [...stream.assets, stream.tradeOnlyAsset];
      const books = await c.getOrderBooks(tokens.map((token_id) => ({ token_id, side: Side.BUY })));
      const one = await Promise.all(stream.assets.map((a) => c.getOrderBook(a)));
      expect(books).toEqual(one.filter((b) => !('error' in b)));
      expect(books.map((b) => b.asset_id)).toEqual(stream.assets.filter((a) => model.bookAt(a, at) !== null));
    }
  });

  it('getLastTradePrice: the last trade at or before the instant, with its taker side; trade-only assets too', async () => {
    for (const asset of [...stream.assets, stream.tradeOnlyAsset]) {
      const times = trades.filter((t) => t.asset === asset).map((t) => t.t);
      for (const at of [times[0], times[Math.floor(times.length / 2)], times.at(-1)! + 1]) {
        const ref = trades.filter((t) => t.asset === asset && t.t <= at).at(-1)!;
        const ticks = await v1(`/v1/ticks?asset_id=${asset}&start=${stream.start}&end=${at}&event_type=last_trade_price&limit=100000`);
        expect(await client(at).getLastTradePrice(asset)).toEqual({ price: String(ticks.body.data.at(-1).price), side: ref.side });
        expect(String(ticks.body.data.at(-1).price)).toBe(String(Number(ref.price)));
      }
    }
  });

  it('getPricesHistory: the /v1/prices-history points, startTs/endTs in seconds and intervals ending at the instant', async () => {
    for (const asset of stream.assets) {
      for (const at of instantsOf(asset)) {
        const c = client(at);
        const startTs = Math.floor(stream.start / 1000) - 30.25;
        for (const fidelity of [1, 5]) {
          const got = history(await c.getPricesHistory({ market: asset, startTs, endTs: Math.ceil(stream.end / 1000) + 60, fidelity }));
          const want = await v1(`/v1/prices-history?asset_id=${asset}&start=${Math.round(startTs * 1000)}&end=${at}&fidelity=${fidelity * 60}&limit=10000`);
          expect(got).toEqual({ history: want.body.data });
          expect(got.history.length).toBeGreaterThan(0);
          expect(got.history.every((p) => p.t * 1000 <= at)).toBe(true);
        }
        const hour = history(await c.getPricesHistory({ market: asset, interval: PriceHistoryInterval.ONE_HOUR, fidelity: 1 }));
        const want = await v1(`/v1/prices-history?asset_id=${asset}&start=${at - 3_600_000}&end=${at}&fidelity=60&limit=10000`);
        expect(hour).toEqual({ history: want.body.data });
      }
    }
  }, 120_000);

  it('before the first book: the client gets Polymarket’s error, as a value or thrown (throwOnError)', async () => {
    for (const asset of stream.assets) {
      const before = model.times(asset)[0] - 1;
      const c = client(before);
      expect(await c.getOrderBook(asset)).toEqual({ error: 'No orderbook exists for the requested token id', status: 404 });
      expect(await c.getMidpoint(asset)).toEqual({ error: 'No orderbook exists for the requested token id', status: 404 });
      expect(await c.getPrice(asset, Side.BUY)).toEqual({ error: 'No orderbook exists for the requested token id', status: 404 });
      expect(await c.getSpread(asset)).toEqual({ error: 'No orderbook exists for the requested token id', status: 404 });
      await expect(c.getTickSize(asset)).rejects.toThrow('market not found');
      await expect(c.getNegRisk(asset)).rejects.toThrow('market not found');
      await expect(client(before, true).getOrderBook(asset)).rejects.toThrow('No orderbook exists for the requested token id');
      expect(await c.getOrderBooks([{ token_id: asset, side: Side.BUY }])).toEqual([]);
    }
    expect(await client('latest').getOrderBook(stream.tradeOnlyAsset)).toEqual({ error: 'No orderbook exists for the requested token id', status: 404 });
  });
});
