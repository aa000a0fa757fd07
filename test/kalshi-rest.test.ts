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

beforeAll(async () => {
  s = await startReplayService(T0 + 86_400_000);
  const rand = prng(40);
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
  }
  const writer = new BatchWriter(s.te.engine, { sourceId: 'kalshi-rest-test' });
  const normalizer = new KalshiNormalizer(writer, { seq: fileSeq('kalshi-rest-test') });
  for (const line of lines) normalizer.push(line);
  await writer.flush();
  await writer.settle();
  expect(normalizer.stats.gaps).toBe(0);
  expect(normalizer.stats.malformed).toBe(0);
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
