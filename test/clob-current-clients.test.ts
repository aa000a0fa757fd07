import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createPublicClient, forkEnvironmentConfig, OrderSide, UnexpectedResponseError } from '@polymarket/client';
import { fetchMarketInfo, fetchNegRisk, fetchTickSize, resolveConditionByToken } from '@polymarket/client/actions';
import { Chain, ClobClient, Side } from '@polymarket/clob-client-v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoTokens, generateDemo } from '../src/demo/frames.js';
import { seedDemo } from '../src/demo/seed.js';
import { type ReplayService, startReplayService } from './support/replay-service.js';

/**
 * Polymarket's current official TypeScript clients, unmodified, from npm, against the time machine on
 * the demo dataset (a v1 market with a tick size change, a v2 market, a v2 moneyline market):
 * `@polymarket/clob-client-v2` (1.1) with `host` = `/v1/clob/{key}/at/{instant}`, and `@polymarket/client`
 * (0.2) with its CLOB REST and market WebSocket endpoints forked (`forkEnvironmentConfig`) to the same
 * base and to the replay. At instants inside the stream every read call returns without error and
 * equals `/v1/orderbook`, `/v1/price`, `/v1/instruments`, `/v1/ticks` and `/v1/prices-history` there.
 */
const END = Date.UTC(2026, 7, 14, 18, 30, 0, 321);
const SEED = 37;
const demo = generateDemo({ seed: SEED, ticks: 30_000, endMs: END });
const [v1Market, v2Market, , , , , , , , moneyline] = demo.gammaMarkets;
const TOKENS = [demoTokens(v1Market)[0], ...demoTokens(v2Market), demoTokens(moneyline)[0]];

let s: ReplayService;

beforeAll(async () => {
  s = await startReplayService(END + 60_000);
  await seedDemo(s.te.engine, { seed: SEED, ticks: 30_000, endMs: END });
}, 120_000);

afterAll(async () => {
  await s?.close();
});

async function v1<T = Record<string, unknown>>(path: string): Promise<T> {
  const res = await fetch(`${s.httpUrl}${path}`, { headers: { authorization: `Bearer ${s.key}` } });
  expect(res.status).toBe(200);
  return (await res.json()).data as T;
}

type Level = { price: number; size: number };
interface Reference {
  book: { market: string; timestamp: number; bids: Level[]; asks: Level[] };
  price: { best_bid: number; best_ask: number; midpoint: number; spread: number };
  instrument: {
    market: string;
    outcome: string;
    tick_size: number;
    min_order_size: number;
    neg_risk: boolean;
    protocol_version: string | null;
    fees: { taker_base_fee: number | null; rate: number | null; exponent: number | null };
  };
  /** The last trade at or before the instant, with its taker side. */
  trade: { price: number; taker_side: string } | undefined;
}

async function reference(token: string, at: number): Promise<Reference> {
  const [book, price, instrument, trades] = await Promise.all([
    v1<Reference['book']>(`/v1/orderbook?asset_id=${token}&timestamp=${at}&limit=100`),
    v1<Reference['price']>(`/v1/price?asset_id=${token}&timestamp=${at}`),
    v1<Reference['instrument']>(`/v1/instruments?asset_id=${token}&timestamp=${at}`),
    v1<{ price: number; taker_side: string }[]>(
      `/v1/ticks?asset_id=${token}&start=${END - 4 * 86_400_000}&end=${at}&event_type=last_trade_price&fields=taker_side&limit=100000`,
    ),
  ]);
  expect(book.bids.length).toBeLessThan(100);
  expect(book.asks.length).toBeLessThan(100);
  return { book, price, instrument, trade: trades.at(-1) };
}

/** Instants inside a token's stream: at one of its events, 1 ms before it, and between events. */
async function instantsOf(token: string): Promise<number[]> {
  const ticks = await v1<{ t: number }[]>(`/v1/ticks?asset_id=${token}&start=${END - 4 * 86_400_000}&end=${END}&limit=100000`);
  const times = ticks.map((t) => t.t);
  const at = (f: number) => times[Math.floor(f * (times.length - 1))];
  return [at(0.55), at(0.8) - 1, at(0.95) + 1];
}

const base = (at: number) => `${s.httpUrl}/v1/clob/${s.key}/at/${at}`;
/** Polymarket lists the best level last on both sides (/v1 first), prices and sizes as strings. */
const polymarketLevels = (levels: Level[]) => [...levels].reverse().map((l) => ({ price: String(l.price), size: String(l.size) }));
const sortedTokens = (market: string) => demo.gammaMarkets.flatMap((m) => (m.conditionId === market ? demoTokens(m) : [])).sort();

describe('@polymarket/clob-client-v2', () => {
  it('answers every read call at past instants as /v1 does, for v1, v2 and moneyline tokens', async () => {
    expect(TOKENS).toHaveLength(4);
    for (const token of TOKENS) {
      for (const at of await instantsOf(token)) {
        const ref = await reference(token, at);
        const c = new ClobClient({ host: base(at), chain: Chain.POLYGON, throwOnError: true });
        const book = await c.getOrderBook(token);
        expect(book).toMatchObject({
          market: ref.book.market,
          asset_id: token,
          timestamp: String(ref.book.timestamp),
          bids: polymarketLevels(ref.book.bids),
          asks: polymarketLevels(ref.book.asks),
          min_order_size: String(ref.instrument.min_order_size),
          tick_size: String(ref.instrument.tick_size),
          neg_risk: ref.instrument.neg_risk,
        });
        expect(await c.getOrderBookHash(book)).toBe(book.hash);
        expect(await c.getOrderBooks([{ token_id: token, side: Side.BUY }])).toEqual([book]);
        expect(await c.getMidpoint(token)).toEqual({ mid: String(ref.price.midpoint) });
        expect(await c.getMidpoints([{ token_id: token, side: Side.BUY }])).toEqual({ [token]: String(ref.price.midpoint) });
        expect(await c.getSpread(token)).toEqual({ spread: String(ref.price.spread) });
        expect(await c.getSpreads([{ token_id: token, side: Side.BUY }])).toEqual({ [token]: String(ref.price.spread) });
        expect(await c.getPrice(token, Side.BUY)).toEqual({ price: ref.price.best_bid });
        expect(await c.getPrice(token, Side.SELL)).toEqual({ price: ref.price.best_ask });
        expect(
          await c.getPrices([
            { token_id: token, side: Side.BUY },
            { token_id: token, side: Side.SELL },
          ]),
        ).toEqual({ [token]: { BUY: String(ref.price.best_bid), SELL: String(ref.price.best_ask) } });
        // The instants lie after the token's first trade.
        expect(ref.trade).toBeDefined();
        const last = { price: String(ref.trade!.price), side: ref.trade!.taker_side.toUpperCase() };
        expect(await c.getLastTradePrice(token)).toEqual(last);
        expect(await c.getLastTradesPrices([{ token_id: token, side: Side.BUY }])).toEqual([{ token_id: token, ...last }]);
        expect(await c.getTickSize(token)).toBe(String(ref.instrument.tick_size));
        expect(await c.getNegRisk(token)).toBe(ref.instrument.neg_risk);
        expect(await c.getFeeRateBps(token)).toBe(ref.instrument.fees.taker_base_fee ?? 0);
        // markets-by-token, then clob-markets: the fee curve's exponent (0 without a fee schedule, as the client defaults).
        expect(await c.getFeeExponent(token)).toBe(ref.instrument.fees.exponent ?? 0);
        const info = await c.getClobMarketInfo(ref.instrument.market);
        const tokens = sortedTokens(ref.instrument.market);
        const firstRef = await reference(tokens[0], at);
        expect(info).toEqual({
          t: await Promise.all(tokens.map(async (t) => ({ t, o: (await reference(t, at)).instrument.outcome }))),
          mos: firstRef.instrument.min_order_size,
          mts: firstRef.instrument.tick_size,
          nr: firstRef.instrument.neg_risk,
          mbf: 0,
          tbf: 0,
          protocol_version: ref.instrument.protocol_version,
        });
        const startTs = Math.floor(at / 1000) - 7200;
        const history = await c.getPricesHistory({ market: token, startTs, endTs: Math.floor(at / 1000) + 600, fidelity: 5 });
        const want = await v1(`/v1/prices-history?asset_id=${token}&start=${startTs * 1000}&end=${at}&fidelity=300&limit=10000`);
        expect(history).toEqual({ history: want });
      }
    }
  });

  it('names the protocol of the v2 and moneyline markets, and labels the moneyline tokens by their sides', async () => {
    const at = (await instantsOf(TOKENS[1]))[0];
    const c = new ClobClient({ host: base(at), chain: Chain.POLYGON, throwOnError: true });
    // The client's MarketDetails type does not declare tickhouse's addition; the answer carries it.
    type WithProtocol = { protocol_version: string; t: { t: string; o: string }[] };
    const info = async (client: ClobClient, market: string) => (await client.getClobMarketInfo(market)) as unknown as WithProtocol;
    expect((await info(c, v2Market.conditionId)).protocol_version).toBe('v2');
    expect((await info(c, v1Market.conditionId)).protocol_version).toBe('v1');
    const ml = await info(new ClobClient({ host: base((await instantsOf(TOKENS[3]))[0]), chain: Chain.POLYGON }), moneyline.conditionId);
    expect(ml.protocol_version).toBe('v2');
    const labels = Object.fromEntries(demoTokens(moneyline).map((t, i) => [t, ['Real Madrid', 'Bayern Munich'][i]]));
    expect(ml.t.map((t) => t.o)).toEqual(ml.t.map((t) => labels[t.t]));
  });
});

describe('@polymarket/client', () => {
  const client = (at: number) => createPublicClient({ environment: forkEnvironmentConfig({ name: 'tickhouse', clob: { rest: base(at) } }) });

  it('answers its CLOB read calls at past instants through forkEnvironmentConfig, as /v1 does', async () => {
    for (const token of TOKENS) {
      for (const at of await instantsOf(token)) {
        const ref = await reference(token, at);
        const c = client(at);
        const book = await c.fetchOrderBook({ tokenId: token });
        expect(book).toEqual({
          conditionId: ref.book.market,
          tokenId: token,
          timestamp: ref.book.timestamp,
          bids: polymarketLevels(ref.book.bids),
          asks: polymarketLevels(ref.book.asks),
          minOrderSize: String(ref.instrument.min_order_size),
          tickSize: String(ref.instrument.tick_size),
          negRisk: ref.instrument.neg_risk,
          lastTradePrice: expect.stringMatching(/^0\.\d+$/),
          hash: expect.stringMatching(/^[0-9a-f]{40}$/),
        });
        expect(await c.fetchOrderBooks([{ tokenId: token }])).toEqual([book]);
        expect(await c.fetchMidpoint({ tokenId: token })).toBe(String(ref.price.midpoint));
        expect(await c.fetchMidpoints([{ tokenId: token }])).toEqual({ [token]: String(ref.price.midpoint) });
        expect(await c.fetchSpread({ tokenId: token })).toBe(String(ref.price.spread));
        expect(await c.fetchSpreads([{ tokenId: token }])).toEqual({ [token]: String(ref.price.spread) });
        expect(
          await c.fetchPrices([
            { tokenId: token, side: OrderSide.BUY },
            { tokenId: token, side: OrderSide.SELL },
          ]),
        ).toEqual({ [token]: { BUY: String(ref.price.best_bid), SELL: String(ref.price.best_ask) } });
        const last = { price: String(ref.trade!.price), side: ref.trade!.taker_side.toUpperCase() };
        expect(await c.fetchLastTradePrice({ tokenId: token })).toEqual(last);
        expect(await c.fetchLastTradePrices([{ tokenId: token }])).toEqual([{ tokenId: token, ...last }]);
        // The package's low-level actions (its client object exposes them to its order workflows, not as methods).
        expect(await fetchTickSize(c, { tokenId: token })).toBe(ref.instrument.tick_size);
        expect(await fetchNegRisk(c, { tokenId: token })).toBe(ref.instrument.neg_risk);
        expect(await resolveConditionByToken(c, { tokenId: token })).toBe(ref.instrument.market);
        const tokens = sortedTokens(ref.instrument.market);
        expect(await fetchMarketInfo(c, { conditionId: ref.instrument.market })).toEqual({
          feeInfo: { rate: ref.instrument.fees.rate ?? 0, exponent: ref.instrument.fees.exponent ?? 0 },
          tokens: await Promise.all(tokens.map(async (t) => ({ tokenId: t, outcome: (await reference(t, at)).instrument.outcome }))),
        });
        const startTs = Math.floor(at / 1000) - 7200;
        // Whole seconds (the client sends integers): the range ends at the second before the instant.
        const endTs = Math.floor(at / 1000);
        const want = await v1(`/v1/prices-history?asset_id=${token}&start=${startTs * 1000}&end=${endTs * 1000}&fidelity=60&limit=10000`);
        expect(await c.fetchPriceHistory({ tokenId: token, startTs, endTs, fidelity: 1 })).toEqual(want);
      }
    }
  });

  // GET /price answers a number, as it always has (Polymarket's clob-openapi.yaml; the archived clients'
  // tests); this client validates a string there. POST /prices answers strings, which it reads.
  it('fetchPrice rejects the numeric /price answer: fetchPrices is the call to use', async () => {
    const at = (await instantsOf(TOKENS[1]))[0];
    await expect(client(at).fetchPrice({ tokenId: TOKENS[1], side: OrderSide.BUY })).rejects.toBeInstanceOf(UnexpectedResponseError);
  });

  it('subscribes through its market WebSocket to the replay and receives the stored events of a v2 market', async () => {
    const ticks = await Promise.all(
      demoTokens(v2Market).map((t) =>
        v1<{ t: number; event: string; price: number; size: number }[]>(`/v1/ticks?asset_id=${t}&start=${END - 4 * 86_400_000}&end=${END}&limit=100000`),
      ),
    );
    const to = ticks[0][Math.floor(0.7 * (ticks[0].length - 1))].t;
    const from = to - 20 * 60_000;
    const inWindow = ticks.map((list) => list.filter((t) => t.t > from && t.t <= to));
    // The initial books (one per token) and then every stored event of the window, a price_change item counted once per token.
    const expected = 2 + inWindow.flat().length;
    const url = s.replayUrl({ from, to, speed: 'max', key: s.key });
    const flags = typeof WebSocket === 'undefined' ? ['--experimental-websocket'] : [];
    const child = spawn(
      process.execPath,
      [...flags, '--import', 'tsx', fileURLToPath(new URL('./support/polymarket-client-ws.ts', import.meta.url)), url, demoTokens(v2Market).join(',')],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    type Event = { type: string; payload: Record<string, unknown> & { priceChanges?: Record<string, unknown>[] } };
    const events: Event[] = [];
    let seen = 0;
    for await (const line of createInterface({ input: child.stdout! })) {
      const e = JSON.parse(line) as Event;
      events.push(e);
      seen += e.type === 'price_change' ? e.payload.priceChanges!.filter((c) => demoTokens(v2Market).includes(c.tokenId as string)).length : 1;
      if (seen >= expected) break;
    }
    child.kill('SIGTERM');
    expect(seen).toBe(expected);
    for (const [i, token] of demoTokens(v2Market).entries()) {
      const got = events.flatMap((e) => {
        if (e.type === 'price_change')
          return e.payload
            .priceChanges!.filter((c) => c.tokenId === token)
            .map((c) => ['price_change', Number(e.payload.timestamp), Number(c.price), Number(c.size)]);
        if (e.payload.tokenId !== token) return [];
        if (e.type === 'last_trade_price') return [['last_trade_price', Number(e.payload.timestamp), Number(e.payload.price), Number(e.payload.size)]];
        return [[e.type, Number(e.payload.timestamp), 0, 0]];
      });
      const [initial, ...rest] = got;
      const atFrom = await v1<{ timestamp: number }>(`/v1/orderbook?asset_id=${token}&timestamp=${from}&limit=1`);
      expect(initial).toEqual(['book', atFrom.timestamp, 0, 0]);
      expect(rest).toEqual(inWindow[i].map((t) => [t.event, t.t, t.event === 'book' ? 0 : t.price, t.event === 'book' ? 0 : t.size]));
    }
  });
});
