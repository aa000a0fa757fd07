import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { type ExpectedTick, generateStream, json, replayStream, startTicksApp, type TicksApp } from './support/ticks-fixture.js';

const START = Date.UTC(2026, 5, 18, 0, 0, 0, 0);
const NOW = Date.UTC(2026, 5, 20, 12);

let t: TicksApp;
const all: ExpectedTick[] = [];
const meta = new Map<string, { market: string; outcome: string; question: string }>();

const ASSETS = [
  { asset_id: '500', market: '0xAbCdEf01', outcome: 'Yes', question: 'Will the Fed cut rates in July?' },
  { asset_id: '501', market: '0xAbCdEf01', outcome: 'No', question: 'Will the Fed cut rates in July?' },
  { asset_id: '9', market: '0x1234beef', outcome: 'Up', question: 'Bitcoin up or down today?' },
  { asset_id: '10', market: '0x1234beef', outcome: 'Down', question: 'Bitcoin up or down today?' },
  { asset_id: '77', market: '0x77777777', outcome: 'Yes', question: 'Will it snow in Paris?' },
];

const fmt = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

function expectedEntries() {
  const by = new Map<string, ExpectedTick[]>();
  for (const k of all) by.set(k.asset_id, [...(by.get(k.asset_id) ?? []), k]);
  return [...by.entries()]
    .map(([asset_id, ticks]) => {
      const m = meta.get(asset_id);
      return {
        market: m?.market ?? '0xnometa',
        asset_id,
        side: m ? m.outcome.toUpperCase() : 'UNKNOWN',
        first_seen: fmt(ticks[0].t),
        last_seen: fmt(ticks[ticks.length - 1].t),
        total_ticks: ticks.length,
        ...(m ? { question: m.question, slug: m.question.toLowerCase().replace(/\W+/g, '-') } : {}),
        // Replayed files carry no capture record: all 7 days unknown (docs/TIME-MACHINE.md §4).
        coverage: { unknown: 7 },
        // The instrument now (docs/TIME-MACHINE.md §5): these streams hold no market event and their Gamma
        // objects no trading rules, so the market comes from the ticks, the outcome from metadata, the rest
        // are Polymarket's defaults.
        outcome: m?.outcome ?? '',
        tick_size: 0.01,
        min_order_size: 5,
        neg_risk: false,
        fees: { enabled: null, taker_base_fee: null, maker_base_fee: null, rate: null, exponent: null, taker_only: null, rebate_rate: null },
        status: 'open',
        winner: null,
        resolved_at: null,
        source: {
          market: 'history',
          outcome: m ? 'metadata' : 'default',
          question: m ? 'metadata' : 'default',
          tick_size: 'default',
          min_order_size: 'default',
          neg_risk: 'default',
          fees: 'default',
          status: 'default',
          protocol_version: 'default',
        },
        protocol_version: null,
      };
    })
    .sort((x, y) => y.total_ticks - x.total_ticks || (x.asset_id < y.asset_id ? -1 : x.asset_id > y.asset_id ? 1 : 0));
}

beforeAll(async () => {
  t = await startTicksApp(NOW);
  // Different activity per asset: each stream cycles through its assets evenly.
  const groups = [ASSETS.slice(0, 2), ASSETS.slice(2, 4), ASSETS.slice(4)];
  const sizes = [900, 700, 700];
  for (let g = 0; g < groups.length; g++) {
    const s = generateStream({ assets: groups[g], start: START + g * 1000, events: sizes[g], meanGapMs: 60_000, seed: 100 + g });
    await replayStream(t.deps, s, `markets-${g}`);
    all.push(...s.ticks);
    for (const a of groups[g]) meta.set(a.asset_id, a);
  }
  // A token without metadata: ticks say UNKNOWN, no question/slug.
  const orphan = generateStream({
    assets: [{ asset_id: '4242', market: '0xnometa', outcome: 'x', question: 'x' }],
    start: START,
    events: 50,
    meanGapMs: 1000,
    seed: 5,
  });
  const lines = orphan.lines;
  await replayLines(t.deps.engine, lines, { sourceId: 'orphan' });
  all.push(...orphan.ticks.map((k) => ({ ...k, side: 'UNKNOWN' })));
});

afterAll(() => t?.close());

const get = (path: string) => t.app.request(path);

describe('GET /v1/markets (public)', () => {
  it('lists every token with ticks, by total_ticks desc then asset_id asc as text', async () => {
    const body = await json(await get('/v1/markets'));
    const expected = expectedEntries();
    expect(body.data).toEqual(expected);
    expect(body.meta).toEqual({ count: expected.length, offset: 0, limit: 100, total: expected.length });
    // The tie between 9 and 10 (same tick count) sorts as text: "10" < "9".
    const ids = body.data.map((e: { asset_id: string }) => e.asset_id);
    expect(ids.indexOf('10')).toBeLessThan(ids.indexOf('9'));
  });

  it('searches the condition id and the question, case-insensitively', async () => {
    const byId = await json(await get('/v1/markets?search=abcdef'));
    expect(byId.data.map((e: { asset_id: string }) => e.asset_id).sort()).toEqual(['500', '501']);
    expect(byId.meta.total).toBe(2);
    const byQuestion = await json(await get('/v1/markets?search=BITCOIN%20UP'));
    expect(byQuestion.data.map((e: { asset_id: string }) => e.asset_id)).toEqual(
      expectedEntries()
        .filter((e) => ['9', '10'].includes(e.asset_id))
        .map((e) => e.asset_id),
    );
    const none = await json(await get('/v1/markets?search=%25%27%22'));
    expect(none).toEqual({ success: true, data: [], meta: { count: 0, offset: 0, limit: 100, total: 0 } });
  });

  it('pages with limit and offset, total counting every match', async () => {
    const expected = expectedEntries();
    const page = await json(await get('/v1/markets?limit=2&offset=3'));
    expect(page.data).toEqual(expected.slice(3, 5));
    expect(page.meta).toEqual({ count: 2, offset: 3, limit: 2, total: expected.length });
    const past = await json(await get('/v1/markets?offset=100'));
    expect(past.meta).toEqual({ count: 0, offset: 100, limit: 100, total: expected.length });
  });

  const cases: [string, string, RegExp][] = [
    ['limit 0', 'limit=0', /limit must be an integer between 1 and 1000/],
    ['limit 1001', 'limit=1001', /limit must be an integer between 1 and 1000/],
    ['offset -1', 'offset=-1', /offset must be an integer/],
    ['offset text', 'offset=abc', /offset must be an integer/],
    ['search too long', `search=${'a'.repeat(201)}`, /search must be text of at most 200 characters/],
  ];
  for (const [name, qs, message] of cases) {
    it(`400 for ${name}`, async () => {
      const body = await json(await get(`/v1/markets?${qs}`), 400);
      expect(body.detail).toMatchObject({ error: 'invalid_parameter', param: qs.split('=')[0] });
      expect(body.detail.message).toMatch(message);
    });
  }
});

describe('GET /v1/markets/stats (public)', () => {
  it('reports totals, events and the last 24 h from the rollups', async () => {
    const cut = all[Math.floor(all.length / 2)].t + 29_123;
    t.clock.set(cut + 86_400_000);
    const body = await json(await get('/v1/markets/stats'));
    const times = all.map((k) => k.t);
    expect(body).toEqual({
      success: true,
      data: {
        total_markets: 4,
        total_assets: 6,
        total_ticks: all.length,
        total_snapshots: all.filter((k) => k.event === 'book').length,
        first_timestamp: Math.min(...times),
        last_timestamp: Math.max(...times),
        ticks_last_24h: all.filter((k) => k.t >= cut && k.t <= cut + 86_400_000).length,
        events: {
          price_change: all.filter((k) => k.event === 'price_change').length,
          book: all.filter((k) => k.event === 'book').length,
          last_trade_price: all.filter((k) => k.event === 'last_trade_price').length,
        },
      },
    });
    expect(body.data.ticks_last_24h).toBeGreaterThan(0);
    expect(body.data.ticks_last_24h).toBeLessThan(all.length);
  });
});
