import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OrderBook } from '../src/book/index.js';
import { bookSummary } from '../src/clob/book-summary.js';
import { replayLines } from '../src/ingest/frame-files.js';
import { setLogLevel } from '../src/log.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { fixturePath } from './support/fixtures.js';

/**
 * The Polymarket-compatible read API (docs/TIME-MACHINE.md §2) on a small hand-written stream: exact
 * bodies of every endpoint at instants before, inside and after its events, and every error status
 * in Polymarket's `{"error": …}` shape. Expected values are worked out by hand from the frames.
 */

// A minute boundary (1766000040 s is a multiple of 60), so prices-history buckets are easy to read.
const T0 = 1_766_000_040_000;
const S = 1000;
const A = '111'; // market 0xm1, Gamma metadata: orderMinSize 15, tick 0.001, negRisk true
const B = '222'; // market 0xm2, metadata without trading rules: Polymarket's defaults
const C = '333'; // trades only, never a book
const frames = [
  // Wire order: bids ascending, asks descending.
  [
    {
      event_type: 'book',
      asset_id: A,
      market: '0xm1',
      timestamp: String(T0),
      hash: 'h',
      bids: [
        { price: '0.40', size: '100' },
        { price: '0.45', size: '20.5' },
      ],
      asks: [
        { price: '0.55', size: '30' },
        { price: '0.50', size: '12' },
      ],
    },
  ],
  { event_type: 'last_trade_price', asset_id: A, market: '0xm1', price: '0.5', side: 'BUY', size: '10', fee_rate_bps: '0', timestamp: String(T0 + 30 * S) },
  {
    event_type: 'price_change',
    market: '0xm1',
    timestamp: String(T0 + 60 * S),
    price_changes: [{ asset_id: A, price: '0.46', size: '7', side: 'BUY', hash: 'h', best_bid: '0.46', best_ask: '0.5' }],
  },
  { event_type: 'book', asset_id: B, market: '0xm2', timestamp: String(T0 + 60 * S), hash: 'h', bids: [{ price: '0.2', size: '5' }], asks: [] },
  {
    event_type: 'price_change',
    market: '0xm1',
    timestamp: String(T0 + 90 * S),
    price_changes: [{ asset_id: A, price: '0.5', size: '0', side: 'SELL', hash: 'h', best_bid: '0.46', best_ask: '0.55' }],
  },
  { event_type: 'last_trade_price', asset_id: A, market: '0xm1', price: '0.46', side: 'SELL', size: '3', fee_rate_bps: '0', timestamp: String(T0 + 120 * S) },
  { event_type: 'last_trade_price', asset_id: C, market: '0xm3', price: '0.3', side: 'BUY', size: '1', fee_rate_bps: '0', timestamp: String(T0 + 150 * S) },
].map((f) => JSON.stringify(f));
const gamma = [
  {
    conditionId: '0xm1',
    question: 'Q?',
    slug: 'q',
    outcomes: '["Yes","No"]',
    clobTokenIds: `["${A}","112"]`,
    orderMinSize: 15,
    orderPriceMinTickSize: 0.001,
    negRisk: true,
    updatedAt: '2025-12-01T00:00:00Z',
  },
  // Metadata without trading rules: B answers Polymarket's defaults.
  { conditionId: '0xm2', question: 'R?', slug: 'r', outcomes: '["Up","Down"]', clobTokenIds: `["${B}","223"]`, updatedAt: '2025-12-01T00:00:00Z' },
];

let d: DataApp;
const NOW = T0 + 3 * 86_400_000;

beforeAll(async () => {
  d = await startDataApp(NOW);
  const summary = await replayLines(d.te.engine, frames, { sourceId: 'clob-api', markets: gamma });
  expect(summary.normalizer.malformed).toBe(0);
}, 60_000);
afterAll(() => d?.close());

const base = (at: number | string, key = d.key) => `/v1/clob/${key}/at/${at}`;
async function call(path: string, init?: RequestInit) {
  const res = await d.app.request(path, init);
  return { status: res.status, body: await res.json(), res };
}
const post = (path: string, body: unknown) =>
  call(path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json' } });

/** Polymarket's hash rule, written from the rule (SHA-1 of the compact JSON with hash ""), checked on the real sample below. */
function withHash(summary: Record<string, unknown>) {
  const unhashed = { ...summary, hash: '' };
  return { ...unhashed, hash: createHash('sha1').update(JSON.stringify(unhashed)).digest('hex') };
}
const level = (price: string, size: string) => ({ price, size });
const bookA = (timestamp: number, bids: object[], asks: object[], last: string) =>
  withHash({
    market: '0xm1',
    asset_id: A,
    timestamp: String(timestamp),
    hash: '',
    bids,
    asks,
    min_order_size: '15',
    tick_size: '0.001',
    neg_risk: true,
    last_trade_price: last,
  });

describe('the hash of a book summary', () => {
  it('equals the exchange hash of a real /book answer (test/fixtures/polymarket/rest-book.json)', () => {
    const real = JSON.parse(readFileSync(fixturePath('polymarket/rest-book.json'), 'utf8'));
    const levels = (xs: { price: string; size: string }[]) => xs.map((l) => ({ price: Number(l.price), size: Number(l.size) }));
    const state = { market: real.market, timestamp: Number(real.timestamp), book: OrderBook.of(levels(real.bids), levels(real.asks)) };
    const summary = bookSummary(real.asset_id, state, { min_order_size: 5, tick_size: 0.001, neg_risk: true }, null);
    expect(JSON.stringify(summary)).toBe(JSON.stringify(real));
  });
});

describe('market trading rules', () => {
  it('are stored from Gamma (NULL when absent), and re-replaying the same metadata stores no new rows', async () => {
    const stored = () => d.te.engine.rows<Record<string, unknown>>('SELECT asset_id, min_order_size, tick_size, neg_risk FROM markets ORDER BY asset_id');
    const before = await stored();
    expect(before).toEqual([
      { asset_id: A, min_order_size: 15, tick_size: 0.001, neg_risk: true },
      { asset_id: '112', min_order_size: 15, tick_size: 0.001, neg_risk: true },
      { asset_id: B, min_order_size: null, tick_size: null, neg_risk: null },
      { asset_id: '223', min_order_size: null, tick_size: null, neg_risk: null },
    ]);
    await replayLines(d.te.engine, [], { sourceId: 'clob-api-metadata-again', markets: gamma });
    expect(await stored()).toEqual(before);
  });
});

describe('GET /book and POST /books', () => {
  it('the whole book at instants inside the stream, levels ascending / descending, with metadata and the last trade', async () => {
    expect(await call(`${base(T0)}/book?token_id=${A}`)).toMatchObject({
      status: 200,
      body: bookA(T0, [level('0.4', '100'), level('0.45', '20.5')], [level('0.55', '30'), level('0.5', '12')], ''),
    });
    expect((await call(`${base(T0 + 30 * S)}/book?token_id=${A}`)).body).toEqual(
      bookA(T0, [level('0.4', '100'), level('0.45', '20.5')], [level('0.55', '30'), level('0.5', '12')], '0.5'),
    );
    expect((await call(`${base(T0 + 60 * S)}/book?token_id=${A}`)).body).toEqual(
      bookA(T0 + 60 * S, [level('0.4', '100'), level('0.45', '20.5'), level('0.46', '7')], [level('0.55', '30'), level('0.5', '12')], '0.5'),
    );
    const last = bookA(T0 + 90 * S, [level('0.4', '100'), level('0.45', '20.5'), level('0.46', '7')], [level('0.55', '30')], '0.46');
    expect((await call(`${base(T0 + 130 * S)}/book?token_id=${A}`)).body).toEqual(last);
    expect((await call(`${base('latest')}/book?token_id=${A}`)).body).toEqual(last);
  });

  it('a token without metadata gets Polymarket defaults; an empty side is []', async () => {
    expect((await call(`${base(T0 + 60 * S)}/book?token_id=${B}`)).body).toEqual(
      withHash({
        market: '0xm2',
        asset_id: B,
        timestamp: String(T0 + 60 * S),
        hash: '',
        bids: [level('0.2', '5')],
        asks: [],
        min_order_size: '5',
        tick_size: '0.01',
        neg_risk: false,
        last_trade_price: '',
      }),
    );
  });

  it('the exact bytes: key order as Polymarket sends them', async () => {
    const res = await d.app.request(`${base(T0)}/book?token_id=${B}&x=1`);
    expect(res.status).toBe(404);
    const text = await (await d.app.request(`${base(T0 + 60 * S)}/book?token_id=${B}`)).text();
    const hash = /"hash":"([0-9a-f]{40})"/.exec(text)?.[1];
    expect(text).toBe(
      `{"market":"0xm2","asset_id":"222","timestamp":"1766000100000","hash":"${hash}",` +
        '"bids":[{"price":"0.2","size":"5"}],"asks":[],"min_order_size":"5","tick_size":"0.01","neg_risk":false,"last_trade_price":""}',
    );
    expect(hash).toMatch(/^[0-9a-f]{40}$/);
  });

  it('POST /books: request order, tokens without a book left out, at most 500', async () => {
    const { status, body } = await post(`${base(T0 + 60 * S)}/books`, [{ token_id: B }, { token_id: C }, { token_id: A, side: 'BUY' }, { token_id: '999' }]);
    expect(status).toBe(200);
    expect(body).toEqual([(await call(`${base(T0 + 60 * S)}/book?token_id=${B}`)).body, (await call(`${base(T0 + 60 * S)}/book?token_id=${A}`)).body]);
    expect((await post(`${base(T0)}/books`, [])).body).toEqual([]);
    const many = Array.from({ length: 500 }, () => ({ token_id: A }));
    const fiveHundred = await post(`${base(T0)}/books`, many);
    expect(fiveHundred.status).toBe(200);
    expect(fiveHundred.body).toHaveLength(500);
    expect(await post(`${base(T0)}/books`, [...many, { token_id: A }])).toMatchObject({
      status: 400,
      body: { error: 'Invalid payload: at most 500 token ids' },
    });
    // 500 real-length (77-digit) token ids with sides: ~60 KB, over the 16 KiB limit of /v1 bodies.
    const real = Array.from({ length: 500 }, (_, i) => ({ token_id: String(i).padStart(77, '7'), side: 'SELL' }));
    expect(JSON.stringify(real).length).toBeGreaterThan(50_000);
    expect(await post(`${base(T0)}/books`, real)).toEqual(expect.objectContaining({ status: 200, body: [] }));
  });

  it('POST /prices, /midpoints, /spreads, /last-trades-prices: each token once, tokens without a book left out, lists in request order', async () => {
    const at = base(T0 + 60 * S);
    const one = async (path: string) => (await call(`${at}${path}`)).body;
    const asked = [{ token_id: B }, { token_id: '999' }, { token_id: A }, { token_id: B }];
    const midpoints = (await post(`${at}/midpoints`, asked)).body;
    expect(midpoints).toEqual({ [B]: (await one(`/midpoint?token_id=${B}`)).mid, [A]: (await one(`/midpoint?token_id=${A}`)).mid });
    expect((await post(`${at}/spreads`, asked)).body).toEqual({
      [B]: (await one(`/spread?token_id=${B}`)).spread,
      [A]: (await one(`/spread?token_id=${A}`)).spread,
    });
    // Strings here, where GET /price answers numbers.
    const prices = (
      await post(`${at}/prices`, [
        { token_id: A, side: 'SELL' },
        { token_id: '999', side: 'BUY' },
        { token_id: A, side: 'BUY' },
      ])
    ).body;
    expect(prices).toEqual({ [A]: { SELL: '0.5', BUY: '0.46' } });
    const lasts = (await post(`${at}/last-trades-prices`, asked)).body;
    expect(lasts).toEqual([
      { token_id: B, ...(await one(`/last-trade-price?token_id=${B}`)) },
      { token_id: A, ...(await one(`/last-trade-price?token_id=${A}`)) },
    ]);
    expect(await post(`${at}/prices`, [{ token_id: A }])).toMatchObject({ status: 400 });
    expect(
      await post(
        `${at}/midpoints`,
        Array.from({ length: 501 }, () => ({ token_id: A })),
      ),
    ).toMatchObject({
      status: 400,
      body: { error: 'Invalid payload: at most 500 token ids' },
    });
  });
});

describe('price, midpoint, spread', () => {
  it('BUY → best bid, SELL → best ask, as numbers; mid and spread as strings', async () => {
    const at = base(T0 + 60 * S);
    expect((await call(`${at}/price?token_id=${A}&side=BUY`)).body).toEqual({ price: 0.46 });
    expect((await call(`${at}/price?token_id=${A}&side=SELL`)).body).toEqual({ price: 0.5 });
    expect((await call(`${at}/midpoint?token_id=${A}`)).body).toEqual({ mid: '0.48' });
    expect((await call(`${at}/spread?token_id=${A}`)).body).toEqual({ spread: '0.04' });
    const later = base(T0 + 90 * S);
    expect((await call(`${later}/price?token_id=${A}&side=SELL`)).body).toEqual({ price: 0.55 });
    expect((await call(`${later}/midpoint?token_id=${A}`)).body).toEqual({ mid: '0.505' });
    expect((await call(`${later}/spread?token_id=${A}`)).body).toEqual({ spread: '0.09' });
  });

  it('an empty side counts as 0 (bids) or 1 (asks), as /v1/price', async () => {
    const at = base(T0 + 60 * S);
    expect((await call(`${at}/price?token_id=${B}&side=SELL`)).body).toEqual({ price: 1 });
    expect((await call(`${at}/midpoint?token_id=${B}`)).body).toEqual({ mid: '0.6' });
    expect((await call(`${at}/spread?token_id=${B}`)).body).toEqual({ spread: '0.8' });
  });
});

describe('last-trade-price, tick-size, neg-risk', () => {
  it('the last trade at or before the instant, with the taker side', async () => {
    expect((await call(`${base(T0 + 30 * S - 1)}/last-trade-price?token_id=${A}`)).body).toEqual({ price: '0.5', side: '' });
    expect((await call(`${base(T0 + 30 * S)}/last-trade-price?token_id=${A}`)).body).toEqual({ price: '0.5', side: 'BUY' });
    expect((await call(`${base(T0 + 120 * S)}/last-trade-price?token_id=${A}`)).body).toEqual({ price: '0.46', side: 'SELL' });
    expect((await call(`${base('latest')}/last-trade-price?token_id=${C}`)).body).toEqual({ price: '0.3', side: 'BUY' });
    expect((await call(`${base(T0 + 60 * S)}/last-trade-price?token_id=${B}`)).body).toEqual({ price: '0.5', side: '' });
  });

  it('tick size and neg risk from metadata, else Polymarket defaults', async () => {
    const at = base(T0 + 60 * S);
    expect((await call(`${at}/tick-size?token_id=${A}`)).body).toEqual({ minimum_tick_size: 0.001 });
    expect((await call(`${at}/neg-risk?token_id=${A}`)).body).toEqual({ neg_risk: true });
    expect((await call(`${at}/tick-size?token_id=${B}`)).body).toEqual({ minimum_tick_size: 0.01 });
    expect((await call(`${at}/neg-risk?token_id=${B}`)).body).toEqual({ neg_risk: false });
  });
});

describe('prices-history', () => {
  const history = (at: number | string, query: string) => call(`${base(at)}/prices-history?market=${A}&${query}`);
  it('one point per fidelity-minute bucket, t in seconds, from ticks at or before the instant only', async () => {
    expect((await history(T0 + 200 * S, `startTs=${T0 / S}`)).body).toEqual({
      history: [
        { t: 1766000040, p: 0.475 },
        { t: 1766000100, p: 0.505 },
        { t: 1766000160, p: 0.505 },
      ],
    });
    // The instant cuts the second bucket: only the change at +60 s counts, the one at +90 s is later.
    expect((await history(T0 + 75 * S, `startTs=${T0 / S}&endTs=${(T0 + 500 * S) / S}`)).body).toEqual({
      history: [
        { t: 1766000040, p: 0.475 },
        { t: 1766000100, p: 0.48 },
      ],
    });
    // Two-minute buckets (1766000040 is a multiple of 120): +0 … +60 s so far, the last at +60 s.
    expect((await history(T0 + 80 * S, `startTs=${T0 / S}&fidelity=2`)).body).toEqual({ history: [{ t: 1766000040, p: 0.48 }] });
  });

  it('fractional seconds, endTs, interval and an empty range', async () => {
    expect((await history(T0 + 200 * S, `startTs=${(T0 + 60 * S) / S + 0.5}&endTs=${(T0 + 100 * S) / S}`)).body).toEqual({
      history: [{ t: 1766000100, p: 0.505 }],
    });
    expect((await history(T0 + 200 * S, 'interval=1h')).body.history).toHaveLength(3);
    expect((await history(T0 + 100 * S, 'interval=max&fidelity=60')).body).toEqual({ history: [{ t: 1765998000, p: 0.505 }] });
    expect((await history(T0 + 200 * S, `startTs=${(T0 + 300 * S) / S}`)).body).toEqual({ history: [] });
    expect((await history(T0 - 1, 'interval=1d')).body).toEqual({ history: [] });
    expect((await history('latest', `startTs=${T0 / S}`)).body).toEqual((await history(T0 + 200 * S, `startTs=${T0 / S}`)).body);
  });

  it('at most 100,000 points: more is a 400 asking for a larger fidelity', async () => {
    // 100,001 ticks one minute apart, ending one minute before T0 (straight into ticks: only the count matters).
    const first = T0 - 100_001 * 60 * S;
    await d.te.engine.command(
      `INSERT INTO ticks (asset_id, t, seq, event, side, best_bid, best_ask, price, size, book_side, market)
       SELECT '444', fromUnixTimestamp64Milli(toInt64({first:Int64} + number * 60000), 'UTC'), number, 'last_trade_price', 'YES', 0.4, 0.6, 0.5, 1,
         'BUY', '0xm4'
       FROM numbers(100001)`,
      { params: { first } },
    );
    const query = (fidelity: number) => call(`${base(T0)}/prices-history?market=444&startTs=${first / S}&fidelity=${fidelity}`);
    expect(await query(1)).toMatchObject({ status: 400, body: { error: 'More than 100000 points: use a larger fidelity or a shorter range.' } });
    const { status, body } = await query(2);
    expect(status).toBe(200);
    expect(body.history).toHaveLength(50_001);
  }, 60_000);
});

describe('errors, in Polymarket shape', () => {
  it('404: no book at the instant, unknown token, unknown path under the base', async () => {
    const before = base(T0 - 1);
    for (const path of ['book', 'midpoint', 'spread', 'price']) {
      expect(await call(`${before}/${path}?token_id=${A}&side=BUY`)).toMatchObject({
        status: 404,
        body: { error: 'No orderbook exists for the requested token id' },
      });
    }
    for (const path of ['tick-size', 'neg-risk'])
      expect(await call(`${before}/${path}?token_id=${A}`)).toMatchObject({ status: 404, body: { error: 'market not found' } });
    expect(await call(`${before}/last-trade-price?token_id=${A}`)).toMatchObject({
      status: 404,
      body: { error: 'No orderbook exists for the requested token id' },
    });
    expect(await call(`${base('latest')}/book?token_id=${C}`)).toMatchObject({
      status: 404,
      body: { error: 'No orderbook exists for the requested token id' },
    });
    expect(await call(`${base(T0)}/markets`)).toEqual(expect.objectContaining({ status: 404, body: { error: 'Not found: GET /markets' } }));
    expect(await call(`${base(T0)}/book`, { method: 'DELETE' })).toMatchObject({ status: 404, body: { error: 'Not found: DELETE /book' } });
  });

  it('400: bad token id, side, instant, body and history parameters', async () => {
    const at = base(T0);
    expect(await call(`${at}/book`)).toEqual(expect.objectContaining({ status: 400, body: { error: 'Invalid token id: a token id is 1-100 decimal digits' } }));
    expect(await call(`${at}/book?token_id=0xabc`)).toMatchObject({ status: 400, body: { error: 'Invalid token id: a token id is 1-100 decimal digits' } });
    expect(await call(`${at}/price?token_id=${A}&side=buy`)).toEqual(expect.objectContaining({ status: 400, body: { error: 'Invalid side' } }));
    expect(await call(`${base('yesterday')}/book?token_id=${A}`)).toEqual(
      expect.objectContaining({ status: 400, body: { error: 'instant must be Unix milliseconds or latest' } }),
    );
    expect(await post(`${at}/books`, '[{"token_id":')).toEqual(
      expect.objectContaining({ status: 400, body: { error: 'The request body must be a JSON object.' } }),
    );
    expect(await post(`${at}/books`, { token_id: A })).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^Invalid payload: /) } });
    expect(await post(`${at}/books`, [{ token_id: 'x' }])).toMatchObject({
      status: 400,
      body: { error: 'Invalid payload: 0.token_id: Invalid token id: a token id is 1-100 decimal digits' },
    });
    const h = (q: string) => call(`${at}/prices-history?${q}`);
    expect(await h(`startTs=1`)).toMatchObject({ status: 400, body: { error: 'Invalid market: a token id is 1-100 decimal digits' } });
    expect(await h(`market=${A}`)).toMatchObject({ status: 400, body: { error: 'startTs or interval is required' } });
    expect(await h(`market=${A}&interval=1h&startTs=1`)).toMatchObject({ status: 400, body: { error: 'interval and startTs/endTs are mutually exclusive' } });
    expect(await h(`market=${A}&interval=2h`)).toMatchObject({ status: 400, body: { error: 'interval must be one of 1m, 1w, 1d, 6h, 1h, max, all' } });
    expect(await h(`market=${A}&startTs=-1`)).toMatchObject({ status: 400, body: { error: 'startTs must be Unix seconds (fractions allowed), 0 or more' } });
    expect(await h(`market=${A}&startTs=1&fidelity=0`)).toMatchObject({
      status: 400,
      body: { error: 'fidelity must be an integer of minutes between 1 and 525600' },
    });
  });

  it('413: a /books body over 128 KiB', async () => {
    const huge = JSON.stringify(Array.from({ length: 499 }, () => ({ token_id: '1'.repeat(100), side: 'BUY', pad: 'x'.repeat(200) })));
    expect(await post(`${base(T0)}/books`, huge)).toMatchObject({ status: 413, body: { error: 'Invalid payload: the body is larger than 128 KiB.' } });
  });

  it('401: a key that is not an account, uncounted', async () => {
    for (const key of ['nope', `${d.key.slice(0, -1)}${d.key.endsWith('a') ? 'b' : 'a'}`]) {
      const { status, body, res } = await call(`${base(T0, key)}/book?token_id=${A}`);
      expect(status).toBe(401);
      expect(body).toEqual({ error: 'A valid API key is required in the path: /v1/clob/<key>/at/<instant>/… (get a key with POST /v1/register).' });
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    }
    expect((await call(`${base(T0, 'nope')}/unknown`)).status).toBe(401);
  });

  it('403: an instant or startTs before the plan window (a latest book counts by its time)', async () => {
    const free = await d.keyFor('free');
    const message = 'Your plan (free) only allows access to the last 0 day(s) of data.';
    expect(await call(`${base(T0 + 60 * S, free)}/book?token_id=${A}`)).toEqual(expect.objectContaining({ status: 403, body: { error: message } }));
    expect(await call(`${base('latest', free)}/midpoint?token_id=${A}`)).toMatchObject({ status: 403, body: { error: message } });
    expect(await call(`${base('latest', free)}/last-trade-price?token_id=${C}`)).toMatchObject({ status: 403, body: { error: message } });
    expect(await call(`${base(NOW, free)}/prices-history?market=${A}&startTs=${T0 / S}`)).toMatchObject({ status: 403, body: { error: message } });
    expect(await call(`${base(NOW, free)}/prices-history?market=${A}&interval=1w`)).toMatchObject({ status: 403, body: { error: message } });
    // `max` is what the plan may see: from its window on (today's ticks: none).
    expect(await call(`${base(NOW, free)}/prices-history?market=${A}&interval=max`)).toMatchObject({ status: 200, body: { history: [] } });
  });

  it('429 with Retry-After after the daily limit; every data request counts once, with X-RateLimit-*', async () => {
    const free = await d.keyFor('free');
    for (let i = 1; i <= 100; i++) {
      const res = await d.app.request(`${base(NOW, free)}/${i % 2 ? 'midpoint' : 'tick-size'}?token_id=${A}`);
      expect(res.status, `request ${i}`).toBe(200);
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(100 - i));
    }
    const { status, body, res } = await call(`${base(NOW, free)}/book?token_id=${A}`);
    expect(status).toBe(429);
    expect(body).toEqual({ error: 'Daily request limit (100) exceeded.' });
    expect(res.headers.get('retry-after')).toBe(String((Date.UTC(2025, 11, 21) - NOW) / 1000));
    expect(res.headers.get('x-ratelimit-limit')).toBe('100');
  });

  it('the access log shows the path without the key', async () => {
    const lines: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    setLogLevel('info');
    try {
      await d.app.request(`${base(T0)}/book?token_id=${A}`);
    } finally {
      setLogLevel('silent');
      write.mockRestore();
    }
    const entry = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request');
    expect(entry).toMatchObject({ path: '/v1/clob/<key>/at/1766000040000/book', route: '/v1/clob/:key/at/:instant/book', status: 200 });
    expect(lines.join('')).not.toContain(d.key);
  });
});

describe('openapi.json', () => {
  it('declares every endpoint under the base with its parameters', async () => {
    const doc = await (await d.app.request('/v1/openapi.json')).json();
    const paths = Object.keys(doc.paths).filter((p) => p.startsWith('/v1/clob/'));
    expect(paths.sort()).toEqual(
      [
        'book',
        'books',
        'clob-markets/{condition_id}',
        'fee-rate',
        'last-trade-price',
        'last-trades-prices',
        'markets-by-token/{token_id}',
        'midpoint',
        'midpoints',
        'neg-risk',
        'price',
        'prices',
        'prices-history',
        'spread',
        'spreads',
        'tick-size',
      ].map((p) => `/v1/clob/{key}/at/{instant}/${p}`),
    );
    const book = doc.paths['/v1/clob/{key}/at/{instant}/book'].get;
    expect(book.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort()).toEqual(['path:instant', 'path:key', 'query:token_id']);
    expect(Object.keys(book.responses).sort()).toEqual(['200', '400', '401', '403', '404', '429', '500', '503']);
    expect(Object.keys(book.responses['429'].headers)).toEqual(['Retry-After']);
    for (const batch of ['books', 'prices', 'midpoints', 'spreads', 'last-trades-prices']) {
      expect(doc.paths[`/v1/clob/{key}/at/{instant}/${batch}`].post.requestBody.content['application/json'].schema.maxItems).toBe(500);
    }
  });
});
