import { Configuration, MarketApi } from 'kalshi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileSeq } from '../src/ingest/normalizer.js';
import { BatchWriter } from '../src/ingest/writer.js';
import { KalshiNormalizer } from '../src/venues/kalshi/normalizer.js';
import { type ReplayService, startReplayService } from './support/replay-service.js';

/**
 * Kalshi's REST orderbook at any past instant (docs/KALSHI.md §6), read by Kalshi's own TypeScript SDK
 * (`kalshi-typescript`, unmodified, from npm) with only its base URL changed. The stream is Kalshi's
 * WebSocket v2 messages (orderbook_snapshot, then orderbook_delta with a per-subscription seq), stored
 * through the Kalshi normalizer; the reference is a model written here from Kalshi's docs alone: both
 * bid ladders in whole 1/10,000 dollars and 1/100 contracts, each delta added to its level (a total of 0
 * or less removes it), and the answer as Kalshi's `orderbook_fp` gives it: `[price_dollars, count_fp]`
 * pairs, price ascending, the best bid last.
 */
const T0 = Date.UTC(2026, 4, 14, 17, 0, 0);
const TICKERS = ['KXBTCD-26MAY1417-T94999.99', 'FED-26JUN-T4.25'];
const DELTAS = 1_500;
const INSTANTS = 500;

let s: ReplayService;

type Ladder = Map<number, number>;
interface ModelBook {
  yes: Ladder;
  no: Ladder;
}
/** Each market's book after each message: [ms, yes, no] copies, in time order. */
const history = new Map<string, [number, ModelBook][]>();

/** A WebSocket `trade` message as generated (its `msg`), in the order sent. */
interface SentTrade {
  trade_id: string;
  market_ticker: string;
  yes_price_dollars: string;
  no_price_dollars: string;
  count_fp: string;
  taker_side: 'yes' | 'no';
  ts: number;
  ts_ms: number;
}
const sentTrades: SentTrade[] = [];

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const dollars = (units: number) => (units / 10_000).toFixed(4);
const counts = (units: number) => (units / 100).toFixed(2);
/** A receive-time prefix as the recorder writes it (ISO 8601 with 7 decimals). */
const received = (ms: number) => `${new Date(ms).toISOString().slice(0, -1)}0000Z `;

/** Kalshi's answer from the model: each ladder ascending by price, at most `depth` of the best levels. */
function expected(book: ModelBook, depth = Number.POSITIVE_INFINITY) {
  const ladder = (l: Ladder) =>
    [...l]
      .sort((a, b) => b[0] - a[0])
      .slice(0, depth)
      .reverse()
      .map(([p, c]) => [dollars(p), counts(c)]);
  return { orderbook_fp: { yes_dollars: ladder(book.yes), no_dollars: ladder(book.no) } };
}

function bookAt(ticker: string, at: number): ModelBook | null {
  let found: ModelBook | null = null;
  for (const [ms, book] of history.get(ticker)!) {
    if (ms > at) break;
    found = book;
  }
  return found;
}

/**
 * Trades (their own random stream): now and then one to three at `ms`, over both markets; sometimes at
 * the next whole second, where min_ts and max_ts bite. Returns the time after them.
 */
function maybeTrades(lines: string[], at: number, tradeRand: () => number): number {
  let ms = at;
  if (tradeRand() >= 0.3) return ms;
  if (tradeRand() < 0.2) ms = Math.ceil((ms + 1) / 1000) * 1000;
  const n = 1 + Math.floor(tradeRand() * 3);
  for (let k = 0; k < n; k++) {
    const ticker = TICKERS[Math.floor(tradeRand() * TICKERS.length)];
    const yes = 1 + Math.floor(tradeRand() * 9_998);
    // Kalshi's own example writes 3 decimals ("0.360"): the twin answers with 4.
    const yesText = tradeRand() < 0.2 && yes % 10 === 0 ? (yes / 10_000).toFixed(3) : dollars(yes);
    const suffix = Math.floor(tradeRand() * 2 ** 40)
      .toString(16)
      .padStart(12, '0');
    const trade: SentTrade = {
      trade_id: `${(sentTrades.length + 1).toString(16).padStart(8, '0')}-ee49-470d-82d8-${suffix}`,
      market_ticker: ticker,
      yes_price_dollars: yesText,
      no_price_dollars: dollars(10_000 - yes),
      count_fp: counts(1 + Math.floor(tradeRand() * 500_000)),
      taker_side: tradeRand() < 0.5 ? 'yes' : 'no',
      ts: Math.floor(ms / 1000),
      ts_ms: ms,
    };
    sentTrades.push(trade);
    lines.push(`${received(ms + 3)}${JSON.stringify({ type: 'trade', sid: 2, msg: trade })}`);
  }
  return ms;
}

beforeAll(async () => {
  s = await startReplayService(T0 + 86_400_000);
  const rand = prng(40);
  const tradeRand = prng(43);
  const lines: string[] = [`${received(T0)}{"id":1,"type":"subscribed","msg":{"channel":"orderbook_delta","sid":1}}`];
  let seq = 0;
  let ms = T0 + 10;
  const books = new Map<string, ModelBook>();
  for (const ticker of TICKERS) {
    // YES bids 0.3000–0.4900, NO bids 0.5000–0.6900 (so every ask 1 − q lies above every bid), sub-penny prices included.
    const yes: Ladder = new Map();
    const no: Ladder = new Map();
    for (let i = 0; i < 8; i++) yes.set(3000 + Math.floor(rand() * 1900), 100 + Math.floor(rand() * 50_000));
    for (let i = 0; i < 8; i++) no.set(5000 + Math.floor(rand() * 1900), 100 + Math.floor(rand() * 50_000));
    const side = (l: Ladder) => JSON.stringify([...l].map(([p, c]) => [dollars(p), counts(c)]));
    lines.push(
      `${received(ms)}{"type":"orderbook_snapshot","sid":1,"seq":${++seq},"msg":{"market_ticker":"${ticker}","market_id":"m-${ticker}",` +
        `"yes_dollars_fp":${side(yes)},"no_dollars_fp":${side(no)}}}`,
    );
    books.set(ticker, { yes, no });
    history.set(ticker, [[ms, { yes: new Map(yes), no: new Map(no) }]]);
    ms += 7;
  }
  for (let i = 0; i < DELTAS; i++) {
    ms += 1 + Math.floor(rand() * 400);
    const ticker = TICKERS[Math.floor(rand() * TICKERS.length)];
    const book = books.get(ticker)!;
    const yesSide = rand() < 0.5;
    const ladder = yesSide ? book.yes : book.no;
    const resting = [...ladder.keys()];
    // Mostly existing levels (removals among them), sometimes a new one.
    const price = resting.length && rand() < 0.7 ? resting[Math.floor(rand() * resting.length)] : (yesSide ? 3000 : 5000) + Math.floor(rand() * 1900);
    const before = ladder.get(price) ?? 0;
    const delta = rand() < 0.25 && before > 0 ? -before : Math.floor(rand() * 20_000) - 5_000;
    const total = before + delta;
    if (total > 0) ladder.set(price, total);
    else ladder.delete(price);
    const text = (delta < 0 ? '-' : '') + counts(Math.abs(delta));
    lines.push(
      `${received(ms + 3)}{"type":"orderbook_delta","sid":1,"seq":${++seq},"msg":{"market_ticker":"${ticker}","market_id":"m-${ticker}",` +
        `"price_dollars":"${dollars(price)}","delta_fp":"${text}","side":"${yesSide ? 'yes' : 'no'}","ts_ms":${ms}}}`,
    );
    history.get(ticker)!.push([ms, { yes: new Map(book.yes), no: new Map(book.no) }]);
    ms = maybeTrades(lines, ms, tradeRand);
  }
  const writer = new BatchWriter(s.te.engine, { sourceId: 'kalshi-rest-test' });
  const normalizer = new KalshiNormalizer(writer, { seq: fileSeq('kalshi-rest-test') });
  for (const line of lines) normalizer.push(line);
  await writer.flush();
  await writer.settle();
  expect(normalizer.stats.gaps).toBe(0);
  expect(normalizer.stats.malformed).toBe(0);
  expect(normalizer.stats.events.trade).toBe(sentTrades.length);
}, 120_000);

afterAll(async () => {
  await s?.close();
});

const api = (instant: number | string, key = s.key) =>
  new MarketApi(new Configuration({ basePath: `${s.httpUrl}/v1/kalshi/${key}/at/${instant}/trade-api/v2` }));

describe('Kalshi REST at any instant, through kalshi-typescript', () => {
  it(`getMarketOrderbook equals the model at ${INSTANTS} instants: at a message, 1 ms before one, between`, async () => {
    const rand = prng(41);
    const times = TICKERS.flatMap((t) => history.get(t)!.map(([ms]) => ms));
    const first = Math.min(...times);
    const last = Math.max(...times);
    let compared = 0;
    for (let i = 0; i < INSTANTS; i++) {
      const ticker = TICKERS[i % TICKERS.length];
      const own = history.get(ticker)!;
      const pick = own[Math.floor(rand() * own.length)][0];
      const instant = [pick, pick - 1, first + Math.floor(rand() * (last - first + 1))][i % 3];
      const want = bookAt(ticker, instant);
      const depth = i % 5 === 0 ? 1 + (i % 4) : undefined;
      if (!want) {
        await expect(api(instant).getMarketOrderbook(ticker, depth)).rejects.toMatchObject({ response: { status: 404 } });
        continue;
      }
      const { data } = await api(instant).getMarketOrderbook(ticker, depth);
      expect(data, `${ticker} at ${instant} depth ${depth}`).toEqual(expected(want, depth));
      compared++;
    }
    expect(compared).toBeGreaterThan(INSTANTS * 0.9);
  }, 300_000);

  it('`latest` is the last book; the answer counts one request; Kalshi’s error shape for a bad key, ticker and depth', async () => {
    const ticker = TICKERS[0];
    const own = history.get(ticker)!;
    expect((await api('latest').getMarketOrderbook(ticker)).data).toEqual(expected(own[own.length - 1][1]));

    const before = await fetch(`${s.httpUrl}/v1/me`, { headers: { authorization: `Bearer ${s.key}` } }).then((r) => r.json());
    await api(own[1][0]).getMarketOrderbook(ticker);
    const after = await fetch(`${s.httpUrl}/v1/me`, { headers: { authorization: `Bearer ${s.key}` } }).then((r) => r.json());
    expect(after.data.requests_today - before.data.requests_today).toBe(1);

    const base = `${s.httpUrl}/v1/kalshi/${s.key}/at/${own[1][0]}/trade-api/v2`;
    const bad = await fetch(`${s.httpUrl}/v1/kalshi/th_nope/at/${own[1][0]}/trade-api/v2/markets/${ticker}/orderbook`);
    expect(bad.status).toBe(401);
    expect((await bad.json()).error).toMatchObject({ code: 'invalid_api_key', service: 'tickhouse' });
    const badTicker = await fetch(`${base}/markets/A%20B/orderbook`);
    expect(badTicker.status).toBe(400);
    expect((await badTicker.json()).error.code).toBe('invalid_parameter');
    const badDepth = await fetch(`${base}/markets/${ticker}/orderbook?depth=101`);
    expect(badDepth.status).toBe(400);
    const unknown = await fetch(`${base}/markets/NOPE-1/orderbook`);
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe('not_found');
    const other = await fetch(`${base}/portfolio/balance`);
    expect(other.status).toBe(404);
  });
});

/**
 * Kalshi's `GET /markets/trades` (docs.kalshi.com, `GetTradesResponse` / `Trade` of kalshi-typescript 3.30),
 * modelled here from the WebSocket `trade` messages this file sent, importing nothing from src/: the
 * market's trades at or before the instant, created at or after `min_ts` and before `max_ts` (Unix
 * seconds), newest first (equal ms: the later sent first), each as Kalshi's `Trade`: its `trade_id`, the
 * count with 2 decimals, the YES price with 4 and NO = 1 − YES exactly, the taker's side as
 * `taker_side` / `taker_outcome_side` and as `taker_book_side` (bid ≡ yes, ask ≡ no), `created_time` the
 * exchange ms in RFC 3339, no block trades.
 */
function priceUnitsOf(text: string): number {
  const [whole, frac = ''] = text.split('.');
  return Number(whole) * 10_000 + Number(frac.padEnd(4, '0'));
}

function modelTrades(ticker: string, instant: number, minTs?: number, maxTs?: number) {
  const order = sentTrades.map((t, i) => ({ t, i }));
  return order
    .filter(
      ({ t }) =>
        t.market_ticker === ticker && t.ts_ms <= instant && (minTs === undefined || t.ts_ms >= minTs * 1000) && (maxTs === undefined || t.ts_ms < maxTs * 1000),
    )
    .sort((a, b) => b.t.ts_ms - a.t.ts_ms || b.i - a.i)
    .map(({ t }) => {
      const yes = priceUnitsOf(t.yes_price_dollars);
      return {
        trade_id: t.trade_id,
        ticker: t.market_ticker,
        count_fp: t.count_fp,
        yes_price_dollars: dollars(yes),
        no_price_dollars: dollars(10_000 - yes),
        taker_side: t.taker_side,
        taker_outcome_side: t.taker_side,
        taker_book_side: t.taker_side === 'yes' ? 'bid' : 'ask',
        created_time: new Date(t.ts_ms).toISOString(),
        is_block_trade: false,
      };
    });
}

/** Every page of getTrades, walked by its cursor; each page checked against the limit. */
async function walk(instant: number | string, ticker: string, limit: number | undefined, minTs?: number, maxTs?: number) {
  const all: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10_000; page++) {
    const { data } = await api(instant).getTrades(limit, cursor, ticker, minTs, maxTs);
    expect(data.trades.length).toBeLessThanOrEqual(limit ?? 100);
    all.push(...data.trades);
    if (data.cursor === '') return { trades: all, pages: page + 1 };
    // A page that is not the last is full.
    expect(data.trades.length).toBe(limit ?? 100);
    cursor = data.cursor;
  }
  throw new Error('the cursor never ended');
}

describe('Kalshi REST trades at any instant, through kalshi-typescript', () => {
  const WALKS = 150;

  it('the trades stored keep equal-ms runs and whole seconds, so the walks below reach them', () => {
    const ms = sentTrades.map((t) => t.ts_ms);
    expect(sentTrades.length).toBeGreaterThan(300);
    expect(ms.filter((m, i) => i > 0 && m === ms[i - 1]).length).toBeGreaterThan(50);
    expect(ms.filter((m) => m % 1000 === 0).length).toBeGreaterThan(20);
  });

  it(`getTrades, every page walked by its cursor, equals the model at ${WALKS} instants (limits 1-1000, min_ts/max_ts)`, async () => {
    const rand = prng(44);
    let compared = 0;
    let pages = 0;
    for (let i = 0; i < WALKS; i++) {
      const ticker = TICKERS[i % TICKERS.length];
      const own = sentTrades.filter((t) => t.market_ticker === ticker);
      const pick = own[Math.floor(rand() * own.length)].ts_ms;
      const instant = [pick, pick - 1, pick + 1 + Math.floor(rand() * 5_000)][i % 3];
      // Small pages over a narrow span (equal-ms runs split across pages), large ones over everything.
      const small = i % 4 === 0;
      const limit = small ? 1 + Math.floor(rand() * 5) : i % 4 === 1 ? undefined : 20 + Math.floor(rand() * 981);
      const second = Math.floor(pick / 1000);
      const minTs = small ? second - 1 - Math.floor(rand() * 4) : i % 5 === 0 ? second - Math.floor(rand() * 200) : undefined;
      const maxTs = i % 7 === 0 ? second + Math.floor(rand() * 3) : undefined;
      const want = modelTrades(ticker, instant, minTs, maxTs);
      const got = await walk(instant, ticker, limit, minTs, maxTs);
      expect(got.trades, `${ticker} at ${instant} limit ${limit} min_ts ${minTs} max_ts ${maxTs}`).toEqual(want);
      compared += want.length;
      pages += got.pages;
    }
    expect(compared).toBeGreaterThan(WALKS * 20);
    expect(pages).toBeGreaterThan(WALKS * 2);
  }, 300_000);

  it('getTrades equals /v1/ticks’ trades at the same instants: time, YES price, count, taker side, newest first', async () => {
    const rand = prng(45);
    let compared = 0;
    for (let i = 0; i < 40; i++) {
      const ticker = TICKERS[i % TICKERS.length];
      const own = sentTrades.filter((t) => t.market_ticker === ticker);
      const instant = own[Math.floor(rand() * own.length)].ts_ms - (i % 2);
      const viaSdk = (await walk(instant, ticker, 1000)).trades as { created_time: string; yes_price_dollars: string; count_fp: string; taker_side: string }[];
      const res = await fetch(
        `${s.httpUrl}/v1/ticks?asset_id=kalshi:${ticker}&start=${T0}&end=${instant}&event_type=last_trade_price&fields=taker_side&limit=100000`,
        { headers: { authorization: `Bearer ${s.key}` } },
      );
      const ticks = ((await res.json()).data as { t: number; price: number; size: number; taker_side: string }[]).reverse();
      expect(
        viaSdk.map((t) => [Date.parse(t.created_time), Number(t.yes_price_dollars), Number(t.count_fp), t.taker_side === 'yes' ? 'buy' : 'sell']),
        `${ticker} at ${instant}`,
      ).toEqual(ticks.map((t) => [t.t, t.price, t.size, t.taker_side]));
      compared += ticks.length;
    }
    expect(compared).toBeGreaterThan(40 * 50);
  });

  it('min_ts is inclusive and max_ts exclusive, at a trade on a whole second; `latest` is every trade; is_block_trade', async () => {
    const onSecond = sentTrades.find((t) => t.ts_ms % 1000 === 0)!;
    const ticker = onSecond.market_ticker;
    const s = onSecond.ts_ms / 1000;
    const ids = (trades: { trade_id: string }[]) => trades.map((t) => t.trade_id);
    const from = await walk('latest', ticker, 1000, s, s + 1);
    expect(ids(from.trades as { trade_id: string }[])).toContain(onSecond.trade_id);
    expect(from.trades).toEqual(modelTrades(ticker, Number.MAX_SAFE_INTEGER, s, s + 1));
    const before = await walk('latest', ticker, 1000, s - 1, s);
    expect(ids(before.trades as { trade_id: string }[])).not.toContain(onSecond.trade_id);
    expect(before.trades).toEqual(modelTrades(ticker, Number.MAX_SAFE_INTEGER, s - 1, s));
    // min_ts after max_ts: nothing.
    expect((await api('latest').getTrades(10, undefined, ticker, s + 1, s)).data).toEqual({ trades: [], cursor: '' });

    const all = await walk('latest', ticker, 1000);
    expect(all.trades).toEqual(modelTrades(ticker, Number.MAX_SAFE_INTEGER));
    // One trade a page: every equal-ms run is split across pages, none repeated or lost.
    const one = await walk('latest', ticker, 1);
    expect(one.pages).toBe(all.trades.length);
    expect(one.trades).toEqual(all.trades);
    expect((await api('latest').getTrades(5, undefined, ticker, undefined, undefined, false)).data.trades).toEqual(all.trades.slice(0, 5));
    expect((await api('latest').getTrades(5, undefined, ticker, undefined, undefined, true)).data).toEqual({ trades: [], cursor: '' });
    // A market without trades (or unknown): no trades, not an error, as Kalshi.
    expect((await api('latest').getTrades(5, undefined, 'NOPE-1')).data).toEqual({ trades: [], cursor: '' });
    // Before the first trade: none.
    expect((await api(sentTrades[0].ts_ms - 1).getTrades(5, undefined, TICKERS[0])).data).toEqual({ trades: [], cursor: '' });
  });

  it('counts one request a page; Kalshi’s error shape for a missing ticker and bad parameters, a bad key and the plan’s window', async () => {
    const ticker = TICKERS[0];
    const at = sentTrades[sentTrades.length - 1].ts_ms;
    const me = () => fetch(`${s.httpUrl}/v1/me`, { headers: { authorization: `Bearer ${s.key}` } }).then((r) => r.json());
    const before = await me();
    await api(at).getTrades(3, undefined, ticker);
    const after = await me();
    expect(after.data.requests_today - before.data.requests_today).toBe(1);

    const base = `${s.httpUrl}/v1/kalshi/${s.key}/at/${at}/trade-api/v2/markets/trades`;
    const bad = async (query: string, param: string) => {
      const res = await fetch(`${base}?${query}`);
      expect(res.status, query).toBe(400);
      const body = await res.json();
      expect(body.error, query).toMatchObject({ code: 'invalid_parameter', service: 'tickhouse' });
      expect(body.error.message, query).toContain(param);
      return body.error.message as string;
    };
    expect(await bad('limit=5', 'ticker')).toMatch(/ticker is required/);
    await expect(api(at).getTrades(5)).rejects.toMatchObject({ response: { status: 400, data: { error: { code: 'invalid_parameter' } } } });
    expect(await bad(`ticker=A%20B`, 'ticker')).toMatch(/must be a Kalshi market ticker/);
    expect(await bad(`ticker=`, 'ticker')).toMatch(/must be a Kalshi market ticker/);
    for (const limit of ['0', '1001', 'x', '-1', '1.5', '']) await bad(`ticker=${ticker}&limit=${limit}`, 'limit');
    for (const ts of ['-1', '1.5', 'x', '', '99999999999999999']) {
      await bad(`ticker=${ticker}&min_ts=${ts}`, 'min_ts');
      await bad(`ticker=${ticker}&max_ts=${ts}`, 'max_ts');
    }
    for (const cursor of ['x', '1', '1.', '.1', '1.2.3', '-1.2']) await bad(`ticker=${ticker}&cursor=${cursor}`, 'cursor');
    await bad(`ticker=${ticker}&is_block_trade=yes`, 'is_block_trade');
    expect((await fetch(`${base}?ticker=${ticker}&cursor=`)).status).toBe(200);

    const badKey = await fetch(`${s.httpUrl}/v1/kalshi/th_nope/at/${at}/trade-api/v2/markets/trades?ticker=${ticker}`);
    expect(badKey.status).toBe(401);
    expect((await badKey.json()).error).toMatchObject({ code: 'invalid_api_key', service: 'tickhouse' });
    const badInstant = await fetch(`${s.httpUrl}/v1/kalshi/${s.key}/at/yesterday/trade-api/v2/markets/trades?ticker=${ticker}`);
    expect(badInstant.status).toBe(400);

    // A free plan reads from today's midnight (the service's now is a day after the stream).
    const free = await s.keyFor('free');
    const freeBase = (instant: number | string) => `${s.httpUrl}/v1/kalshi/${free}/at/${instant}/trade-api/v2/markets/trades?ticker=${ticker}`;
    const old = await fetch(freeBase(at));
    expect(old.status).toBe(403);
    expect((await old.json()).error).toMatchObject({ code: 'data_access_denied', service: 'tickhouse' });
    const now = T0 + 86_400_000;
    const early = await fetch(`${freeBase(now)}&min_ts=${Math.floor(at / 1000)}`);
    expect(early.status).toBe(403);
    // Without min_ts the window bounds the trades: none of yesterday's.
    expect(await (await fetch(freeBase(now))).json()).toEqual({ trades: [], cursor: '' });
    expect(await (await fetch(freeBase('latest'))).json()).toEqual({ trades: [], cursor: '' });
  });
});
