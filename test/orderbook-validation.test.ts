import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { type OrderbookApp, startOrderbookApp } from './support/orderbook-app.js';

/** Parameter validation (docs/API.md §5), errors (§6) and the history window (§2) of the five order book endpoints. */
const NOW = Date.UTC(2026, 5, 25, 12, 0, 0);
const MIDNIGHT = Date.UTC(2026, 5, 25);
const OLD = '111'; // last event three days ago
const FRESH = '222'; // a book from this morning
const OLD_T = NOW - 3 * 86_400_000;
const FRESH_T = NOW - 3_600_000;

let ob: OrderbookApp;
let freeKey: string;

const book = (asset: string, t: number, bids: [string, string][], asks: [string, string][]) =>
  JSON.stringify({
    event_type: 'book',
    asset_id: asset,
    market: '0xm',
    timestamp: String(t),
    hash: 'h',
    bids: bids.map(([price, size]) => ({ price, size })),
    asks: asks.map(([price, size]) => ({ price, size })),
  });

beforeAll(async () => {
  ob = await startOrderbookApp(NOW);
  freeKey = await ob.keyFor('free');
  await replayLines(
    ob.te.engine,
    [
      book(
        OLD,
        OLD_T,
        [
          ['0.4', '10'],
          ['0.45', '5'],
        ],
        [['0.55', '7']],
      ),
      JSON.stringify({
        asset_id: OLD,
        market: '0xm',
        price: '0.45',
        side: 'BUY',
        size: '0',
        hash: 'h',
        timestamp: String(OLD_T + 10),
        event_type: 'price_change',
      }),
      book(FRESH, FRESH_T, [['0.3', '1']], []),
    ],
    { sourceId: 'orderbook-validation' },
  );
});

afterAll(() => ob?.close());

const BASE = {
  '/v1/orderbook': { asset_id: OLD, timestamp: String(NOW), limit: '5' },
  '/v1/orderbook/range': { asset_id: OLD, since: String(OLD_T), until: String(NOW), limit: '10', depth: '5', interval: '1000' },
  '/v1/price': { asset_id: OLD, timestamp: String(NOW) },
  '/v1/prices-history': { asset_id: OLD, start: String(OLD_T), end: String(NOW), fidelity: '60', limit: '10' },
  '/v1/execution-price': { asset_id: OLD, side: 'BUY', amount: '3', timestamp: String(NOW) },
} as const;
type Path = keyof typeof BASE;

const url = (path: Path, change: Record<string, string | null>) => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...BASE[path], ...change })) if (v !== null) q.set(k, v);
  return `${path}?${q}`;
};

const ASSET = 'asset_id must be 1-100 decimal digits';
const TIME = (name: string) => `${name} must be an integer of Unix milliseconds (UTC), 0 or more`;
const AMOUNT = 'amount must be a number of at least 0.000001';
const INT = (name: string, lo: number, hi: number) => `${name} must be an integer between ${lo} and ${hi}`;
const required = (message: string) => message.replace(/^(\w+) /, '$1 is required; it ');

/** [path, change, param, message] */
const cases: [Path, Record<string, string | null>, string, string][] = [];
for (const path of Object.keys(BASE) as Path[]) {
  cases.push(
    [path, { asset_id: null }, 'asset_id', required(ASSET)],
    [path, { asset_id: 'abc' }, 'asset_id', ASSET],
    [path, { asset_id: '' }, 'asset_id', ASSET],
    [path, { asset_id: '1'.repeat(101) }, 'asset_id', ASSET],
  );
}
for (const path of ['/v1/orderbook', '/v1/price', '/v1/execution-price'] as const) {
  for (const bad of ['x', '-1', '1.5', '1e3']) cases.push([path, { timestamp: bad }, 'timestamp', TIME('timestamp')]);
}
cases.push(
  ['/v1/execution-price', { timestamp: null }, 'timestamp', required(TIME('timestamp'))],
  ['/v1/orderbook', { limit: '0' }, 'limit', INT('limit', 1, 100)],
  ['/v1/orderbook', { limit: '101' }, 'limit', INT('limit', 1, 100)],
  ['/v1/orderbook', { limit: 'ten' }, 'limit', INT('limit', 1, 100)],
  ['/v1/orderbook', { limit: '2.5' }, 'limit', INT('limit', 1, 100)],
  ['/v1/orderbook/range', { since: null }, 'since', required(TIME('since'))],
  ['/v1/orderbook/range', { until: null }, 'until', required(TIME('until'))],
  ['/v1/orderbook/range', { since: 'yesterday' }, 'since', TIME('since')],
  ['/v1/orderbook/range', { until: '-3' }, 'until', TIME('until')],
  ['/v1/orderbook/range', { since: String(NOW + 1), until: String(NOW) }, 'since', 'since must be less than or equal to until'],
  ['/v1/orderbook/range', { limit: '0' }, 'limit', INT('limit', 1, 1000)],
  ['/v1/orderbook/range', { limit: '1001' }, 'limit', INT('limit', 1, 1000)],
  ['/v1/orderbook/range', { depth: '0' }, 'depth', INT('depth', 1, 100)],
  ['/v1/orderbook/range', { depth: '101' }, 'depth', INT('depth', 1, 100)],
  ['/v1/orderbook/range', { interval: '999' }, 'interval', INT('interval', 1000, 8_640_000_000_000_000)],
  ['/v1/orderbook/range', { interval: '1s' }, 'interval', INT('interval', 1000, 8_640_000_000_000_000)],
  ['/v1/prices-history', { start: null }, 'start', required(TIME('start'))],
  ['/v1/prices-history', { end: null }, 'end', required(TIME('end'))],
  ['/v1/prices-history', { start: '1.0' }, 'start', TIME('start')],
  ['/v1/prices-history', { end: 'now' }, 'end', TIME('end')],
  ['/v1/prices-history', { start: String(NOW), end: String(NOW - 1) }, 'start', 'start must be less than or equal to end'],
  ['/v1/prices-history', { fidelity: '0' }, 'fidelity', INT('fidelity', 1, 86400)],
  ['/v1/prices-history', { fidelity: '86401' }, 'fidelity', INT('fidelity', 1, 86400)],
  ['/v1/prices-history', { fidelity: '1m' }, 'fidelity', INT('fidelity', 1, 86400)],
  ['/v1/prices-history', { limit: '0' }, 'limit', INT('limit', 1, 10000)],
  ['/v1/prices-history', { limit: '10001' }, 'limit', INT('limit', 1, 10000)],
  ['/v1/execution-price', { side: null }, 'side', required('side must be one of BUY, SELL')],
  ['/v1/execution-price', { side: 'buy' }, 'side', 'side must be one of BUY, SELL'],
  ['/v1/execution-price', { side: 'HOLD' }, 'side', 'side must be one of BUY, SELL'],
  ['/v1/execution-price', { amount: null }, 'amount', required(AMOUNT)],
  // Below one millionth of a share (sizes have 6 decimals) an order fills nothing: 5e-324 once gave an average price of 0.
  ...['0', '-1', 'abc', 'NaN', 'Infinity', '', '1e999', '5e-324', '0.00000099', '9.99e-7'].map(
    (bad) => ['/v1/execution-price', { amount: bad }, 'amount', AMOUNT] as [Path, Record<string, string>, string, string],
  ),
);

describe('order book endpoints: validation', () => {
  it.each(cases)('%s %j → 400 naming %s', async (path, change, param, message) => {
    const res = await ob.get(url(path, change));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: { error: 'invalid_parameter', message, param } });
  });

  it('names the first offending parameter when several are wrong', async () => {
    const res = await ob.get(url('/v1/execution-price', { asset_id: 'x', side: 'y', amount: '0' }));
    expect(res.body.detail.param).toBe('asset_id');
    const res2 = await ob.get(url('/v1/execution-price', { side: 'y', amount: '0' }));
    expect(res2.body.detail.param).toBe('side');
  });

  it('accepts every valid base request and ignores unknown parameters', async () => {
    for (const path of Object.keys(BASE) as Path[]) {
      const res = await ob.get(url(path, { whatever: '1' }));
      expect(res.status, path).toBe(200);
      expect(res.body.success).toBe(true);
    }
  });
});

describe('order book endpoints: errors, defaults and the history window', () => {
  it('requires a key (401) and counts every request toward the daily limit', async () => {
    const anon = await ob.get(url('/v1/orderbook', {}), null);
    expect(anon.status).toBe(401);
    expect(anon.body.detail.error).toBe('invalid_api_key');
    expect(anon.res.headers.get('www-authenticate')).toBe('Bearer');
    for (const path of Object.keys(BASE) as Path[]) {
      const res = await ob.get(url(path, {}));
      expect(res.res.headers.get('x-ratelimit-limit'), path).toBe('500000');
    }
  });

  it('404s with only a message when there is no book at or before the time', async () => {
    for (const path of ['/v1/orderbook', '/v1/price', '/v1/execution-price'] as const) {
      const before = await ob.get(url(path, { timestamp: String(OLD_T - 1) }));
      expect(before.status, path).toBe(404);
      expect(Object.keys(before.body.detail)).toEqual(['message']);
      const unknown = await ob.get(url(path, { asset_id: '999' }));
      expect(unknown.status, path).toBe(404);
    }
    const latestUnknown = await ob.get('/v1/orderbook?asset_id=999');
    expect(latestUnknown.status).toBe(404);
  });

  it('applies the documented defaults and the book rules', async () => {
    const latest = await ob.get(`/v1/orderbook?asset_id=${OLD}`);
    expect(latest.body.data).toEqual({
      market: '0xm',
      asset_id: OLD,
      timestamp: OLD_T + 10,
      datetime: new Date(OLD_T + 10).toISOString().replace('T', ' ').replace('Z', ''),
      best_bid: 0.4,
      best_ask: 0.55,
      bids: [{ price: 0.4, size: 10 }],
      asks: [{ price: 0.55, size: 7 }],
    });
    const atBook = await ob.get(`/v1/orderbook?asset_id=${OLD}&timestamp=${OLD_T}&limit=1`);
    expect(atBook.body.data.bids).toEqual([{ price: 0.45, size: 5 }]);
    expect(atBook.body.data.timestamp).toBe(OLD_T);
    // An empty ask side: best_ask is 1; the execution of a BUY finds nothing.
    const fresh = await ob.get(`/v1/price?asset_id=${FRESH}`);
    expect(fresh.body.data).toMatchObject({ best_bid: 0.3, best_ask: 1, midpoint: 0.65, spread: 0.7 });
    const buy = await ob.get(`/v1/execution-price?asset_id=${FRESH}&side=BUY&amount=2.5&timestamp=${NOW}`);
    expect(buy.body.data).toEqual({
      side: 'BUY',
      requested_amount: 2.5,
      filled_amount: 0,
      average_price: null,
      best_price: null,
      slippage: null,
      slippage_bps: null,
      fully_filled: false,
      fills: [],
    });
    const sell = await ob.get(`/v1/execution-price?asset_id=${FRESH}&side=SELL&amount=2.5&timestamp=${NOW}`);
    expect(sell.body.data).toEqual({
      side: 'SELL',
      requested_amount: 2.5,
      filled_amount: 1,
      average_price: 0.3,
      best_price: 0.3,
      slippage: 0,
      slippage_bps: 0,
      fully_filled: false,
      fills: [{ price: 0.3, size: 1 }],
    });
    // The smallest meaningful order, one millionth of a share, is answered.
    const tiny = await ob.get(`/v1/execution-price?asset_id=${FRESH}&side=SELL&amount=0.000001&timestamp=${NOW}`);
    expect(tiny.body.data).toEqual({
      side: 'SELL',
      requested_amount: 0.000001,
      filled_amount: 0.000001,
      average_price: 0.3,
      best_price: 0.3,
      slippage: 0,
      slippage_bps: 0,
      fully_filled: true,
      fills: [{ price: 0.3, size: 0.000001 }],
    });
    const history = await ob.get(`/v1/prices-history?asset_id=${OLD}&start=${OLD_T}&end=${NOW}`);
    expect(history.body).toEqual({
      success: true,
      data: [{ t: Math.floor(OLD_T / 60_000) * 60, p: 0.475 }],
      meta: { count: 1, fidelity: 60 },
    });
    const snapshots = await ob.get(`/v1/orderbook/range?asset_id=${OLD}&since=${OLD_T}&until=${NOW}`);
    expect(snapshots.body.meta).toEqual({ count: 1 });
    expect(snapshots.body.data[0].bids).toEqual([
      { price: 0.45, size: 5 },
      { price: 0.4, size: 10 },
    ]);
    // Sampling: the points before the first book are skipped, then the first point on or after it.
    const sampled = await ob.get(`/v1/orderbook/range?asset_id=${OLD}&since=${OLD_T - 3000}&until=${NOW}&interval=1000&limit=2`);
    expect(sampled.body.data.map((b: { timestamp: number }) => b.timestamp)).toEqual([OLD_T, OLD_T + 10]);
    const huge = await ob.get(`/v1/orderbook/range?asset_id=${OLD}&since=${OLD_T}&until=8640000000000000&interval=8640000000000000`);
    expect(huge.body.meta).toEqual({ count: 1 });
    const none = await ob.get(`/v1/orderbook/range?asset_id=${OLD}&since=${OLD_T - 5000}&until=${OLD_T - 1}&interval=1000`);
    expect(none.body).toEqual({ success: true, data: [], meta: { count: 0 } });
  });

  it('refuses explicit times before the window with 403 and clamps the implicit latest', async () => {
    const denied = {
      detail: {
        error: 'data_access_denied',
        message: 'Your plan (free) only allows access to the last 0 day(s) of data.',
        plan: 'free',
        earliest_allowed: '2026-06-25T00:00:00+00:00',
      },
    };
    const explicit: [Path, Record<string, string>][] = [
      ['/v1/orderbook', { timestamp: String(MIDNIGHT - 1) }],
      ['/v1/price', { timestamp: String(MIDNIGHT - 1) }],
      ['/v1/execution-price', { timestamp: String(MIDNIGHT - 1) }],
      ['/v1/orderbook/range', { since: String(MIDNIGHT - 1) }],
      ['/v1/prices-history', { start: String(MIDNIGHT - 1) }],
    ];
    for (const [path, change] of explicit) {
      const res = await ob.get(url(path, change), freeKey);
      expect(res.status, path).toBe(403);
      expect(res.body).toEqual(denied);
    }
    // At the boundary the request is allowed.
    expect((await ob.get(url('/v1/orderbook', { asset_id: FRESH, timestamp: String(MIDNIGHT) }), freeKey)).status).toBe(404);
    expect((await ob.get(url('/v1/orderbook', { asset_id: FRESH, timestamp: String(NOW) }), freeKey)).status).toBe(200);
    // Latest: the newest data of OLD is older than the window, FRESH's is inside it.
    for (const path of ['/v1/orderbook', '/v1/price'] as const) {
      const old = await ob.get(`${path}?asset_id=${OLD}`, freeKey);
      expect(old.status, path).toBe(403);
      expect(old.body).toEqual(denied);
      expect((await ob.get(`${path}?asset_id=${FRESH}`, freeKey)).status, path).toBe(200);
    }
  });

  it('documents all five endpoints in /v1/openapi.json', async () => {
    const doc = (await ob.get('/v1/openapi.json')).body;
    for (const path of Object.keys(BASE)) {
      expect(doc.paths[path]?.get, path).toBeDefined();
      expect(doc.paths[path].get.parameters.length, path).toBeGreaterThan(1);
    }
    expect(doc.paths['/v1/execution-price'].get.parameters.map((p: { name: string }) => p.name)).toEqual(['asset_id', 'side', 'amount', 'timestamp']);
  });
});
