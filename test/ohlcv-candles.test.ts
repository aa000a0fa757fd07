import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Candle } from '../src/queries/ohlcv.js';
import { type ExpectedTick, generateStream, json, replayStream, startTicksApp, type TicksApp } from './support/ticks-fixture.js';

const A = '31337';
const B = '31338';
const START = Date.UTC(2026, 5, 1, 3, 17, 11, 5);
const NOW = Date.UTC(2026, 5, 20, 12);
const STEP: Record<string, number> = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '1h': 3_600_000, '4h': 14_400_000, '1d': 86_400_000 };

let t: TicksApp;
let ticksOfA: ExpectedTick[];

/** Candles computed straight from the replayed ticks: arrival order is (t, arrival) order per asset. */
function candlesFromTicks(ticks: ExpectedTick[], resolution: string): Candle[] {
  const step = STEP[resolution];
  const byBucket = new Map<number, Candle>();
  for (const k of ticks) {
    if (k.event !== 'price_change') continue;
    const b = Math.floor(k.t / step) * step;
    const c = byBucket.get(b);
    if (!c) byBucket.set(b, { timestamp: b, open: k.best_bid, high: k.best_bid, low: k.best_bid, close: k.best_bid, volume: 1 });
    else {
      c.high = Math.max(c.high, k.best_bid);
      c.low = Math.min(c.low, k.best_bid);
      c.close = k.best_bid;
      c.volume++;
    }
  }
  return [...byBucket.values()].sort((x, y) => x.timestamp - y.timestamp);
}

function select(all: Candle[], resolution: string, q: { start?: number; end?: number; limit?: number }): Candle[] {
  const limit = q.limit ?? 100;
  const from = q.start === undefined ? -Infinity : Math.floor(q.start / STEP[resolution]) * STEP[resolution];
  const to = q.end ?? NOW;
  const inRange = all.filter((c) => c.timestamp >= from && c.timestamp <= to);
  return q.start === undefined ? inRange.slice(-limit) : inRange.slice(0, limit);
}

const url = (params: Record<string, string | number | undefined>) =>
  `/v1/ohlcv?${new URLSearchParams(
    Object.entries(params)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, String(v)]),
  )}`;

beforeAll(async () => {
  t = await startTicksApp(NOW);
  const stream = generateStream({
    assets: [
      { asset_id: A, market: '0xc1', outcome: 'Up', question: 'Up or down?' },
      { asset_id: B, market: '0xc1', outcome: 'Down', question: 'Up or down?' },
    ],
    start: START,
    events: 6000,
    meanGapMs: 25_000,
    seed: 11,
  });
  await replayStream(t.deps, stream, 'ohlcv');
  ticksOfA = stream.ticks.filter((k) => k.asset_id === A);
});

afterAll(() => t?.close());

describe('GET /v1/ohlcv', () => {
  for (const resolution of Object.keys(STEP)) {
    it(`${resolution}: every candle equals the computation from raw ticks`, async () => {
      const all = candlesFromTicks(ticksOfA, resolution);
      const first = ticksOfA[0].t;
      const body = await json(await t.get(url({ asset_id: A, resolution, start: first, end: NOW, limit: 1000 })));
      expect(body.meta).toEqual({ count: Math.min(all.length, 1000), resolution });
      expect(body.data).toEqual(all.slice(0, 1000));
      expect(all.length).toBeGreaterThan(resolution === '1d' ? 2 : 10);
    });
  }

  it('defaults to 1h and the last 100 buckets up to now', async () => {
    const body = await json(await t.get(url({ asset_id: A })));
    expect(body.meta.resolution).toBe('1h');
    expect(body.data).toEqual(select(candlesFromTicks(ticksOfA, '1h'), '1h', {}));
    expect(body.data).toHaveLength(select(candlesFromTicks(ticksOfA, '1h'), '1h', {}).length);
  });

  it('only start: the first limit buckets from floor(start), each whole', async () => {
    const all = candlesFromTicks(ticksOfA, '15m');
    const start = all[7].timestamp + 123_456; // inside bucket 7: the whole bucket is returned
    const body = await json(await t.get(url({ asset_id: A, resolution: '15m', start, limit: 20 })));
    expect(body.data).toEqual(select(all, '15m', { start, limit: 20 }));
    expect(body.data[0]).toEqual(all[7]);
  });

  it('only end: the last limit buckets up to end, ascending, the bucket holding end whole', async () => {
    const all = candlesFromTicks(ticksOfA, '5m');
    const end = all[300].timestamp + 1;
    const body = await json(await t.get(url({ asset_id: A, resolution: '5m', end, limit: 50 })));
    expect(body.data).toEqual(all.slice(251, 301));
  });

  it('start and end: the first limit buckets from start', async () => {
    const all = candlesFromTicks(ticksOfA, '1m');
    const start = all[10].timestamp;
    const end = all[500].timestamp;
    const body = await json(await t.get(url({ asset_id: A, resolution: '1m', start, end, limit: 30 })));
    expect(body.data).toEqual(all.slice(10, 40));
    const wide = await json(await t.get(url({ asset_id: A, resolution: '1m', start, end, limit: 1000 })));
    expect(wide.data).toEqual(all.slice(10, 501));
  });

  it('answers an asset without ticks with an empty list', async () => {
    expect(await json(await t.get(url({ asset_id: '777' })))).toEqual({ success: true, data: [], meta: { count: 0, resolution: '1h' } });
  });

  it('403 for an explicit start before the window, and when all data is older than the window', async () => {
    const key = await t.keyFor('daily');
    const res = await t.app.request(url({ asset_id: A, start: START }), { headers: { authorization: `Bearer ${key}` } });
    expect((await json(res, 403)).detail).toMatchObject({ error: 'data_access_denied', plan: 'daily', earliest_allowed: '2026-06-13T00:00:00+00:00' });
    const implicit = await t.app.request(url({ asset_id: A }), { headers: { authorization: `Bearer ${key}` } });
    expect((await json(implicit, 403)).detail.error).toBe('data_access_denied');
    const none = await t.app.request(url({ asset_id: '777' }), { headers: { authorization: `Bearer ${key}` } });
    expect((await json(none)).data).toEqual([]);
  });

  const cases: [string, Record<string, string | number>, string, RegExp][] = [
    ['missing asset_id', { resolution: '1m' }, 'asset_id', /asset_id is required/],
    ['bad asset_id', { asset_id: 'x1' }, 'asset_id', /decimal digits/],
    ['unknown resolution', { asset_id: A, resolution: '2m' }, 'resolution', /resolution must be one of 1m, 5m, 15m, 1h, 4h, 1d/],
    ['bad start', { asset_id: A, start: 'yesterday' }, 'start', /Unix milliseconds/],
    ['bad end', { asset_id: A, end: '-5' }, 'end', /Unix milliseconds/],
    ['start > end', { asset_id: A, start: 2000, end: 1000 }, 'start', /start must be less than or equal to end/],
    ['limit 0', { asset_id: A, limit: 0 }, 'limit', /limit must be an integer between 1 and 1000/],
    ['limit 1001', { asset_id: A, limit: 1001 }, 'limit', /limit must be an integer between 1 and 1000/],
  ];
  for (const [name, params, param, message] of cases) {
    it(`400 for ${name}`, async () => {
      const body = await json(await t.get(url(params)), 400);
      expect(body.detail).toMatchObject({ error: 'invalid_parameter', param });
      expect(body.detail.message).toMatch(message);
    });
  }
});
