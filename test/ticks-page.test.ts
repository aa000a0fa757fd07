import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExpectedTick, type GeneratedStream, generateStream, json, replayStream, startTicksApp, type TicksApp } from './support/ticks-fixture.js';

const A = '1001';
const B = '2002';
const START = Date.UTC(2026, 5, 1);
const NOW = Date.UTC(2026, 5, 20, 12);

let t: TicksApp;
let stream: GeneratedStream;
let ticksOfA: ExpectedTick[];

const strip = ({ asset_id: _a, ...tick }: ExpectedTick) => tick;

beforeAll(async () => {
  t = await startTicksApp(NOW);
  stream = generateStream({
    assets: [
      { asset_id: A, market: '0xaaa', outcome: 'Yes', question: 'Will it rain?' },
      { asset_id: B, market: '0xaaa', outcome: 'No', question: 'Will it rain?' },
    ],
    start: START,
    events: 14_000,
    meanGapMs: 40,
    seed: 7,
  });
  await replayStream(t.deps, stream, 'ticks-page');
  ticksOfA = stream.ticks.filter((k) => k.asset_id === A);
});

afterAll(() => t?.close());

const url = (params: Record<string, string | number>) => `/v1/ticks?${new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]))}`;

describe('GET /v1/ticks', () => {
  it('returns the exact ticks, fields and order of the replayed stream', async () => {
    const body = await json(await t.get(url({ asset_id: A, start: START, end: NOW, limit: 100_000 })));
    const expected = ticksOfA.map(strip);
    expect(expected.length).toBeGreaterThan(25_000);
    expect(body.success).toBe(true);
    expect(body.meta).toEqual({ count: expected.length, next_cursor: null });
    expect(body.data).toEqual(expected);
    expect(Object.keys(body.data[0])).toEqual(['t', 'event', 'side', 'best_bid', 'best_ask', 'price', 'size']);
    // The stream really has runs of equal timestamps.
    const runs = expected.filter((k, i) => i > 0 && k.t === expected[i - 1].t).length;
    expect(runs).toBeGreaterThan(10_000);
  });

  it('keeps the range inclusive at both ends and filters by event_type', async () => {
    const mid = ticksOfA[5000].t;
    const last = ticksOfA[9000].t;
    const body = await json(await t.get(url({ asset_id: A, start: mid, end: last, event_type: 'last_trade_price', limit: 100_000 })));
    expect(body.data).toEqual(ticksOfA.filter((k) => k.t >= mid && k.t <= last && k.event === 'last_trade_price').map(strip));
  });

  it('walks ≥ 25,000 ticks by cursor and reassembles exactly the ordered set', async () => {
    const end = START + 86_400_000;
    const expected = ticksOfA.filter((k) => k.t <= end).map(strip);
    const seen: unknown[] = [];
    let cursor: string | null = null;
    let pages = 0;
    let boundariesInsideRuns = 0;
    do {
      const params: Record<string, string | number> = { asset_id: A, start: START, end, limit: 997 };
      if (cursor) params.cursor = cursor;
      const body = await json(await t.get(url(params)));
      expect(body.meta.count).toBe(body.data.length);
      if (body.meta.next_cursor) {
        expect(body.data.length).toBe(997);
        if (expected[seen.length + 996].t === expected[seen.length + 997]?.t) boundariesInsideRuns++;
      }
      seen.push(...body.data);
      cursor = body.meta.next_cursor;
      pages++;
    } while (cursor);
    expect(seen.length).toBeGreaterThanOrEqual(25_000);
    expect(pages).toBe(Math.ceil(expected.length / 997));
    expect(boundariesInsideRuns).toBeGreaterThan(5);
    expect(seen).toEqual(expected);
  });

  it('walks pages inside a run of 40,000 equal timestamps (longer than an engine block), with and without a filter', async () => {
    const C = '3003';
    const t0 = START + 5_000;
    await t.deps.engine.command(
      `INSERT INTO ticks (asset_id, t, seq, event, side, best_bid, best_ask, price, size, market)
       SELECT '${C}', fromUnixTimestamp64Milli(toInt64(${t0} + if(number < 5, 0, if(number < 40005, 7, 9))), 'UTC'), number * 3,
         if(number % 4 = 0, 'book', 'price_change'), 'YES', number / 100000, 0.9, number % 97, number % 13, '0xc'
       FROM numbers(40010)`,
    );
    const all = Array.from({ length: 40_010 }, (_, n) => ({
      t: t0 + (n < 5 ? 0 : n < 40_005 ? 7 : 9),
      event: n % 4 === 0 ? 'book' : 'price_change',
      side: 'YES',
      best_bid: n / 100000,
      best_ask: 0.9,
      price: n % 97,
      size: n % 13,
    }));
    for (const [limit, event_type] of [
      [7_000, undefined],
      [39_999, undefined],
      [3_001, 'book'],
    ] as const) {
      const seen: unknown[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        expect(++pages).toBeLessThan(20);
        const params: Record<string, string | number> = { asset_id: C, start: START, end: NOW, limit };
        if (event_type) params.event_type = event_type;
        if (cursor) params.cursor = cursor;
        const body = await json(await t.get(url(params)));
        expect(body.meta.count).toBe(body.data.length);
        seen.push(...body.data);
        cursor = body.meta.next_cursor;
      } while (cursor);
      expect(seen).toEqual(all.filter((k) => !event_type || k.event === event_type));
    }
  });

  it('ends with next_cursor null exactly when the last page is full', async () => {
    const few = ticksOfA.slice(0, 10);
    const end = few[9].t;
    const n = ticksOfA.filter((k) => k.t <= end).length;
    const body = await json(await t.get(url({ asset_id: A, start: START, end, limit: n })));
    expect(body.meta).toEqual({ count: n, next_cursor: null });
  });

  it('answers an empty range with an empty list', async () => {
    const res = await t.get(url({ asset_id: '999', start: START, end: NOW }));
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await json(res)).toEqual({ success: true, data: [], meta: { count: 0, next_cursor: null } });
  });

  it('compresses with gzip when asked, to the same JSON', async () => {
    const plain = await (await t.get(url({ asset_id: B, start: START, end: NOW, limit: 5000 }))).text();
    const res = await t.get(url({ asset_id: B, start: START, end: NOW, limit: 5000 }), { 'accept-encoding': 'gzip' });
    expect(res.headers.get('content-encoding')).toBe('gzip');
    const { gunzipSync } = await import('node:zlib');
    expect(gunzipSync(Buffer.from(await res.arrayBuffer())).toString()).toBe(plain);
    expect(JSON.parse(plain).data).toEqual(
      stream.ticks
        .filter((k) => k.asset_id === B)
        .slice(0, 5000)
        .map(strip),
    );
  });
});

describe('GET /v1/ticks validation and access', () => {
  const base = { asset_id: A, start: START, end: START + 1000 };
  const cases: [string, Record<string, string | number>, string, RegExp][] = [
    ['missing asset_id', { start: START, end: START }, 'asset_id', /asset_id is required/],
    ['asset_id not digits', { ...base, asset_id: '12a' }, 'asset_id', /asset_id must be 1-100 decimal digits/],
    ['asset_id too long', { ...base, asset_id: '1'.repeat(101) }, 'asset_id', /1-100 decimal digits/],
    ['missing start', { asset_id: A, end: START }, 'start', /start is required/],
    ['negative start', { ...base, start: -1 }, 'start', /Unix milliseconds/],
    ['fractional end', { ...base, end: '1.5' }, 'end', /Unix milliseconds/],
    ['missing end', { asset_id: A, start: START }, 'end', /end is required/],
    ['start > end', { ...base, start: START + 2000 }, 'start', /start must be less than or equal to end/],
    ['unknown event_type', { ...base, event_type: 'trade' }, 'event_type', /event_type must be one of price_change, book, last_trade_price/],
    ['limit 0', { ...base, limit: 0 }, 'limit', /limit must be an integer between 1 and 100000/],
    ['limit too big', { ...base, limit: 100_001 }, 'limit', /limit must be an integer between 1 and 100000/],
    ['limit not a number', { ...base, limit: 'ten' }, 'limit', /limit must be an integer between 1 and 100000/],
    ['malformed cursor', { ...base, cursor: 'not-a-cursor' }, 'cursor', /cursor/],
    ['cursor of another shape', { ...base, cursor: Buffer.from('1:2:3').toString('base64url') }, 'cursor', /cursor/],
  ];
  for (const [name, params, param, message] of cases) {
    it(`400 for ${name}`, async () => {
      const body = await json(await t.get(url(params)), 400);
      expect(body.detail.error).toBe('invalid_parameter');
      expect(body.detail.param).toBe(param);
      expect(body.detail.message).toMatch(message);
    });
  }

  it('403 for a start before the history window', async () => {
    const key = await t.keyFor('daily');
    const res = await t.app.request(url({ asset_id: A, start: START, end: NOW }), { headers: { authorization: `Bearer ${key}` } });
    const body = await json(res, 403);
    expect(body.detail).toEqual({
      error: 'data_access_denied',
      message: 'Your plan (daily) only allows access to the last 7 day(s) of data.',
      plan: 'daily',
      earliest_allowed: '2026-06-13T00:00:00+00:00',
    });
  });

  it('documents the five endpoints in /v1/openapi.json', async () => {
    const doc = await json(await t.app.request('/v1/openapi.json'));
    for (const path of ['/v1/ticks', '/v1/ticks/export', '/v1/ohlcv', '/v1/markets', '/v1/markets/stats']) expect(doc.paths[path]?.get, path).toBeDefined();
    expect(doc.paths['/v1/ticks'].get.parameters.map((p: { name: string }) => p.name)).toEqual([
      'asset_id',
      'start',
      'end',
      'event_type',
      'limit',
      'cursor',
      'fields',
    ]);
  });

  it('401 without a key', async () => {
    const res = await t.app.request(url({ asset_id: A, start: START, end: NOW }));
    expect(res.status).toBe(401);
  });

  it('counts every streamed page toward the daily limit: exact X-RateLimit-* on each, gzip too', async () => {
    // A fresh monthly account (50,000 a day); the clock stands at NOW, so the counter resets at the
    // next UTC midnight, 2026-06-21T00:00:00Z = 1782000000 s.
    const key = await t.keyFor('monthly');
    const get = (params: Record<string, string | number>, headers: Record<string, string> = {}) =>
      t.app.request(url(params), { headers: { authorization: `Bearer ${key}`, ...headers } });
    const first = await get({ asset_id: A, start: START, end: NOW, limit: 3 });
    const cursor = (await json(first.clone())).meta.next_cursor;
    const pages = [
      first,
      await get({ asset_id: A, start: START, end: NOW, limit: 3, cursor }),
      await get({ asset_id: B, start: START, end: NOW, limit: 3 }, { 'accept-encoding': 'gzip' }),
    ];
    expect(pages[2].headers.get('content-encoding')).toBe('gzip');
    pages.forEach((res, i) => {
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit'), `page ${i}`).toBe('50000');
      expect(res.headers.get('x-ratelimit-remaining'), `page ${i}`).toBe(String(50_000 - (i + 1)));
      expect(res.headers.get('x-ratelimit-reset'), `page ${i}`).toBe('1782000000');
    });
    expect(Date.UTC(2026, 5, 21) / 1000).toBe(1782000000);
  });
});
