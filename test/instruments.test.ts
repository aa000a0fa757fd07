import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { takerFee } from '../src/instruments/fees.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { fixturePath } from './support/fixtures.js';

/**
 * The instrument at an instant (docs/TIME-MACHINE.md §5): GET /v1/instruments and the CLOB's
 * /tick-size and /book answer what the stored market channel said then, before today's metadata. The
 * cases are real captured frames (test/fixtures/polymarket/ws-frames.jsonl): the tick size change
 * 0.01 → 0.001 (line 8), the NVDA market listed and resolved (lines 5, 6); and the new_market with a
 * fee schedule and its trade (market-events.jsonl, synthetic values).
 */
const SAMPLE = readFileSync(fixturePath('polymarket/ws-frames.jsonl'), 'utf8').split('\n').filter(Boolean);
const EXTRA = readFileSync(fixturePath('polymarket/market-events.jsonl'), 'utf8').split('\n').filter(Boolean);

const CHANGE = JSON.parse(SAMPLE[7]);
const TSC: string = CHANGE.asset_id;
const TSC_MARKET: string = CHANGE.market;
const T_CHANGE = Number(CHANGE.timestamp);
/** The other token of the tick-size market: a book, no change stored. */
const TSC_NO = '115474063863764126958837769719736461272619491980773624567012766320777398670354';

const LISTED = JSON.parse(SAMPLE[4]);
const RESOLVED = JSON.parse(SAMPLE[5]);
const [NVDA_YES, NVDA_NO]: string[] = RESOLVED.assets_ids;
const T_RESOLVED = Number(RESOLVED.timestamp);

const FEE_MARKET = JSON.parse(EXTRA[0]);
const FEE_TRADE = JSON.parse(EXTRA[1]);
const FEE_YES: string = FEE_TRADE.asset_id;

/**
 * Today's Gamma metadata of the tick-size market (a test object): the tick is 0.001 now. Before the
 * change Polymarket answered 0.01; an answer from this metadata would say 0.001 at every instant.
 */
const GAMMA = [
  {
    conditionId: TSC_MARKET,
    question: 'Will the tick-size market resolve Yes?',
    slug: 'tick-size-market',
    outcomes: '["Yes", "No"]',
    clobTokenIds: JSON.stringify([TSC, TSC_NO]),
    orderMinSize: 5,
    orderPriceMinTickSize: 0.001,
    negRisk: false,
    updatedAt: '2026-06-01T00:00:00Z',
  },
];

/** Books of both tokens a minute before the change, without `tick_size` (as 2025 books were sent). */
const books = [TSC, TSC_NO].map((asset_id) =>
  JSON.stringify({
    event_type: 'book',
    asset_id,
    market: TSC_MARKET,
    timestamp: String(T_CHANGE - 60_000),
    hash: 'h',
    bids: [{ price: '0.96', size: '100' }],
    asks: [{ price: '0.98', size: '50' }],
  }),
);

const NOW = Date.UTC(2026, 10, 26, 12);
let d: DataApp;

beforeAll(async () => {
  d = await startDataApp(NOW);
  const summary = await replayLines(d.te.engine, [...books, SAMPLE[7], SAMPLE[4], SAMPLE[5], SAMPLE[3], ...EXTRA], { sourceId: 'instruments', markets: GAMMA });
  expect(summary.normalizer.malformed).toBe(0);
}, 60_000);
afterAll(() => d?.close());

async function instrument(asset: string, timestamp?: number) {
  const res = await d.get(`/v1/instruments?asset_id=${asset}${timestamp === undefined ? '' : `&timestamp=${timestamp}`}`);
  expect(res.status).toBe(200);
  return (await res.json()).data;
}
const clob = async (at: number, path: string) => (await d.app.request(`/v1/clob/${d.key}/at/${at}${path}`)).json();

const NO_FEES = { enabled: null, taker_base_fee: null, maker_base_fee: null, rate: null, exponent: null, taker_only: null, rebate_rate: null };

describe('a tick size change (real frame, ws-frames.jsonl line 8: 0.01 → 0.001)', () => {
  const tsc = (asOf: number, tick: number) => ({
    asset_id: TSC,
    market: TSC_MARKET,
    outcome: 'Yes',
    question: GAMMA[0].question,
    tick_size: tick,
    min_order_size: 5,
    neg_risk: false,
    fees: NO_FEES,
    status: 'open',
    winner: null,
    resolved_at: null,
    as_of: asOf,
    source: {
      market: 'history',
      outcome: 'metadata',
      question: 'metadata',
      tick_size: 'history',
      min_order_size: 'metadata',
      neg_risk: 'metadata',
      fees: 'default',
      status: 'default',
      protocol_version: 'default',
    },
    // Gamma objects replayed with the frames, not taken in by `ingest replay --markets`: no protocol version stored.
    protocol_version: null,
  });

  it('/v1/instruments 1 ms before: 0.01 (the change’s old tick), at the change: 0.001, both from history', async () => {
    expect(await instrument(TSC, T_CHANGE - 1)).toEqual(tsc(T_CHANGE - 1, 0.01));
    expect(await instrument(TSC, T_CHANGE)).toEqual(tsc(T_CHANGE, 0.001));
    // Before the book too: nothing stated at that instant, the next change's old tick still holds.
    expect((await instrument(TSC, T_CHANGE - 3_600_000)).tick_size).toBe(0.01);
  });

  it('CLOB /tick-size and /book.tick_size say the same at the same instants', async () => {
    expect(await clob(T_CHANGE - 1, `/tick-size?token_id=${TSC}`)).toEqual({ minimum_tick_size: 0.01 });
    expect(await clob(T_CHANGE, `/tick-size?token_id=${TSC}`)).toEqual({ minimum_tick_size: 0.001 });
    expect((await clob(T_CHANGE - 1, `/book?token_id=${TSC}`)).tick_size).toBe('0.01');
    expect((await clob(T_CHANGE, `/book?token_id=${TSC}`)).tick_size).toBe('0.001');
  });

  it('a token with no stored change answers today’s metadata (0.001), and says so', async () => {
    const other = await instrument(TSC_NO, T_CHANGE - 1);
    expect([other.tick_size, other.source.tick_size, other.outcome]).toEqual([0.001, 'metadata', 'No']);
    expect(await clob(T_CHANGE - 1, `/tick-size?token_id=${TSC_NO}`)).toEqual({ minimum_tick_size: 0.001 });
  });
});

describe('an exchange book’s own tick_size and last_trade_price (real frame, ws-frames.jsonl line 4)', () => {
  it('/book and /last-trade-price at the book’s instant answer what it stated; /v1/instruments takes its tick', async () => {
    const book = JSON.parse(SAMPLE[3]);
    const t = Number(book.timestamp);
    const summary = await clob(t, `/book?token_id=${book.asset_id}`);
    expect([summary.tick_size, summary.last_trade_price, summary.min_order_size, summary.neg_risk]).toEqual(['0.01', '0.92', '5', false]);
    // No trade of this token is stored: the book's last trade price, its side unknown.
    expect(await clob(t, `/last-trade-price?token_id=${book.asset_id}`)).toEqual({ price: '0.92', side: '' });
    const inst = await instrument(book.asset_id, t);
    expect([inst.tick_size, inst.source.tick_size, inst.market, inst.source.market, inst.outcome, inst.source.outcome]).toEqual([
      0.01,
      'history',
      book.market,
      'history',
      '',
      'default',
    ]);
  });
});

describe('a resolved market (real frames, ws-frames.jsonl lines 5 and 6: NVDA listed, then resolved to Yes)', () => {
  it('open 1 ms before the resolution (a later one is stored), resolved with its winner from then on, on both tokens', async () => {
    const before = await instrument(NVDA_NO, T_RESOLVED - 1);
    expect([before.status, before.winner, before.resolved_at, before.source.status]).toEqual(['open', null, null, 'history']);
    // The market rows the new_market wrote are metadata before it; history from its timestamp on.
    expect([before.outcome, before.source.outcome]).toEqual(['No', 'metadata']);
    for (const asset of [NVDA_YES, NVDA_NO]) {
      const after = await instrument(asset, T_RESOLVED);
      expect(after).toEqual({
        asset_id: asset,
        market: LISTED.market,
        outcome: asset === NVDA_YES ? 'Yes' : 'No',
        question: LISTED.question,
        tick_size: 0.01,
        min_order_size: 5,
        neg_risk: false,
        fees: NO_FEES,
        status: 'resolved',
        winner: { asset_id: NVDA_YES, outcome: 'Yes' },
        resolved_at: T_RESOLVED,
        as_of: T_RESOLVED,
        source: {
          market: 'history',
          outcome: 'history',
          question: 'history',
          tick_size: 'history',
          min_order_size: 'default',
          neg_risk: 'default',
          fees: 'default',
          status: 'history',
          protocol_version: 'default',
        },
        protocol_version: null,
      });
    }
    // Without a timestamp: now, still resolved.
    expect((await instrument(NVDA_YES)).as_of).toBe(NOW);
    expect((await instrument(NVDA_YES)).status).toBe('resolved');
  });
});

describe('fees from a new_market fee schedule (market-events.jsonl)', () => {
  it('the schedule as of the trade, and the taker fee of the trade worked out by hand', async () => {
    const inst = await instrument(FEE_YES, Number(FEE_TRADE.timestamp));
    expect(inst.fees).toEqual({ enabled: true, taker_base_fee: 1000, maker_base_fee: null, rate: 0.04, exponent: 1, taker_only: true, rebate_rate: 0.25 });
    expect(inst.source.fees).toBe('history');
    expect([inst.outcome, inst.tick_size, inst.question]).toEqual(['Yes', 0.01, FEE_MARKET.question]);
    // The trade as /v1/ticks gives it, with its taker side.
    const res = await d.get(`/v1/ticks?asset_id=${FEE_YES}&start=${FEE_TRADE.timestamp}&end=${NOW}&fields=taker_side`);
    const [trade] = (await res.json()).data;
    expect([trade.event, trade.price, trade.size, trade.taker_side]).toEqual(['last_trade_price', 0.63, 4.25, 'sell']);
    // 4.25 × 0.04 × (0.63 × 0.37)^1 = 0.17 × 0.2331 = 0.039627 → floored to 5 decimals: 0.03962 USDC.
    expect(takerFee(trade.size, trade.price, { rate: inst.fees.rate, exponent: inst.fees.exponent })).toBe(0.03962);
    // Before the market was listed nothing states fees.
    expect((await instrument(FEE_YES, Number(FEE_MARKET.timestamp) - 1)).fees).toEqual(NO_FEES);
  });

  it('/v1/markets lists the traded token with its instrument as of now', async () => {
    const body = await (await d.app.request('/v1/markets?search=NVDA')).json();
    const entry = body.data.find((e: { asset_id: string }) => e.asset_id === FEE_YES);
    expect(entry).toMatchObject({ outcome: 'Yes', tick_size: 0.01, status: 'open', fees: { rate: 0.04, exponent: 1 }, source: { fees: 'history' } });
  });
});

describe('takerFee (Polymarket: size × rate × (p × (1 − p))^exponent, floored to 5 decimals)', () => {
  it('hand-computed fills', () => {
    // ws-frames.jsonl line 9's trade at the politics schedule of gamma-markets.json (rate 0.04):
    // 219.217767 × 0.04 × 0.456 × 0.544 = 2.175201446… → 2.17520.
    expect(takerFee(219.217767, 0.456, { rate: 0.04, exponent: 1 })).toBe(2.1752);
    // At p = 0.5 with the crypto rate 0.072: 100 × 0.072 × 0.25 = 1.8 exactly (not cut to 1.79999).
    expect(takerFee(100, 0.5, { rate: 0.072, exponent: 1 })).toBe(1.8);
    // The January-2026 short crypto schedule (rate 0.25, exponent 2): 100 × 0.25 × 0.0625 = 1.5625.
    expect(takerFee(100, 0.5, { rate: 0.25, exponent: 2 })).toBe(1.5625);
    // Nothing at the edges, and less than 0.00001 floors to 0.
    expect(takerFee(1000, 1, { rate: 0.04, exponent: 1 })).toBe(0);
    expect(takerFee(0.001, 0.5, { rate: 0.04, exponent: 1 })).toBe(0.00001);
    expect(takerFee(0.0009, 0.5, { rate: 0.04, exponent: 1 })).toBe(0);
  });
});

describe('GET /v1/instruments: the usual rules of a data route', () => {
  it('404 for a token nothing knows, 400 for a bad parameter, 403 before the plan window, counted', async () => {
    const missing = await d.get('/v1/instruments?asset_id=999');
    expect([missing.status, await missing.json()]).toEqual([404, { detail: { message: 'No market data or metadata for asset 999.' } }]);
    const bad = await d.get('/v1/instruments?asset_id=abc');
    expect(bad.status).toBe(400);
    expect((await bad.json()).detail).toMatchObject({ error: 'invalid_parameter', param: 'asset_id' });
    const free = await d.keyFor('free');
    const denied = await d.app.request(`/v1/instruments?asset_id=${TSC}&timestamp=${T_CHANGE}`, { headers: { authorization: `Bearer ${free}` } });
    expect(denied.status).toBe(403);
    const ok = await d.app.request(`/v1/instruments?asset_id=${TSC}`, { headers: { authorization: `Bearer ${free}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-ratelimit-remaining')).toBe('98');
    expect((await d.app.request(`/v1/instruments?asset_id=${TSC}`)).status).toBe(401);
    // Nothing can exist after now + 1 minute: a later instant is answered as of then.
    expect((await instrument(TSC, 8_640_000_000_000_000)).as_of).toBe(NOW + 60_000);
  });
});
