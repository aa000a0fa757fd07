import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { type OrderbookApp, startOrderbookApp } from './support/orderbook-app.js';

/**
 * `/v1/execution-price` (docs/API.md §4) against fills computed by hand: every expected number below is
 * written out with its arithmetic, so the test holds no second implementation of the walk.
 *
 * The book of ASSET at T (one `book` event, bids listed ascending and asks descending as real
 * captures list them):
 *   asks: 0.52 × 100, 0.53 × 50, 0.55 × 200, then 0.60, 0.61, …, 0.68 × 10 each (12 levels, 440 shares)
 *   bids: 0.40, 0.39, …, 0.16 × 4 each (25 levels, more than the 20 /v1/orderbook shows by default; 100 shares)
 * At T + 1000 a price_change removes the best bid (0.40).
 */
const ASSET = '8001';
const T = Date.UTC(2026, 5, 22, 9, 30);
const NOW = Date.UTC(2026, 5, 25, 12);

const asks: [string, string][] = [
  ['0.52', '100'],
  ['0.53', '50'],
  ['0.55', '200'],
  ...Array.from({ length: 9 }, (_, i): [string, string] => [(0.6 + i / 100).toFixed(2), '10']),
];
const bids: [string, string][] = Array.from({ length: 25 }, (_, i): [string, string] => [(0.4 - i / 100).toFixed(2), '4']);

let ob: OrderbookApp;

beforeAll(async () => {
  ob = await startOrderbookApp(NOW);
  const level = ([price, size]: [string, string]) => ({ price, size });
  await replayLines(
    ob.te.engine,
    [
      JSON.stringify({
        event_type: 'book',
        asset_id: ASSET,
        market: '0xexec',
        timestamp: String(T),
        hash: 'h',
        bids: [...bids].reverse().map(level),
        asks: [...asks].reverse().map(level),
      }),
      JSON.stringify({
        asset_id: ASSET,
        market: '0xexec',
        price: '0.40',
        side: 'BUY',
        size: '0',
        hash: 'h',
        timestamp: String(T + 1000),
        event_type: 'price_change',
      }),
    ],
    { sourceId: 'execution-price' },
  );
});

afterAll(() => ob?.close());

const execution = async (side: 'BUY' | 'SELL', amount: string, at = T) => {
  const res = await ob.get(`/v1/execution-price?asset_id=${ASSET}&side=${side}&amount=${amount}&timestamp=${at}`);
  expect(res.status).toBe(200);
  return res.body;
};

const tenCentLevels = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ price: Number((from + i / 100).toFixed(2)), size: 10 }));

describe('/v1/execution-price against hand-computed fills', () => {
  it('BUY inside the first ask level: one fill at the best price, no slippage', async () => {
    expect(await execution('BUY', '30')).toEqual({
      success: true,
      data: {
        side: 'BUY',
        requested_amount: 30,
        filled_amount: 30,
        average_price: 0.52,
        best_price: 0.52,
        slippage: 0,
        slippage_bps: 0,
        fully_filled: true,
        fills: [{ price: 0.52, size: 30 }],
      },
    });
  });

  it('BUY across three ask levels, the last one partly', async () => {
    // 100 × 0.52 = 52, 50 × 0.53 = 26.5, 100 × 0.55 = 55 → 133.5 for 250 shares.
    // average 133.5 / 250 = 0.534; slippage 0.534 − 0.52 = 0.014; bps 0.014 / 0.52 × 10⁴ = 269.2307… → 269.23.
    expect((await execution('BUY', '250')).data).toEqual({
      side: 'BUY',
      requested_amount: 250,
      filled_amount: 250,
      average_price: 0.534,
      best_price: 0.52,
      slippage: 0.014,
      slippage_bps: 269.23,
      fully_filled: true,
      fills: [
        { price: 0.52, size: 100 },
        { price: 0.53, size: 50 },
        { price: 0.55, size: 100 },
      ],
    });
  });

  it('BUY of a fractional amount: 0.5 share of the second level', async () => {
    // 100 × 0.52 = 52, 0.5 × 0.53 = 0.265 → 52.265 for 100.5 shares.
    // average 52.265 / 100.5 = 0.52004975… → 0.52005; slippage 0.00004975… → 0.00005;
    // bps 0.0000497512 / 0.52 × 10⁴ = 0.9567… → 0.96.
    expect((await execution('BUY', '100.5')).data).toEqual({
      side: 'BUY',
      requested_amount: 100.5,
      filled_amount: 100.5,
      average_price: 0.52005,
      best_price: 0.52,
      slippage: 0.00005,
      slippage_bps: 0.96,
      fully_filled: true,
      fills: [
        { price: 0.52, size: 100 },
        { price: 0.53, size: 0.5 },
      ],
    });
  });

  // The whole ask side: 52 + 26.5 + 200 × 0.55 (= 110) + 10 × (0.60 + 0.61 + … + 0.68) (= 10 × 5.76 = 57.6)
  // = 246.1 for 440 shares. average 246.1 / 440 = 0.5593181… → 0.559318; slippage 0.0393181… → 0.039318;
  // bps 0.0393181818 / 0.52 × 10⁴ = 756.1188… → 756.12. Fills: the first 10 of the 12 levels used.
  const wholeAskSide = {
    average_price: 0.559318,
    best_price: 0.52,
    slippage: 0.039318,
    slippage_bps: 756.12,
    fills: [{ price: 0.52, size: 100 }, { price: 0.53, size: 50 }, { price: 0.55, size: 200 }, ...tenCentLevels(0.6, 7)],
  };

  it('BUY of exactly the visible depth fills fully; only the first 10 fills are listed', async () => {
    expect((await execution('BUY', '440')).data).toEqual({ side: 'BUY', requested_amount: 440, filled_amount: 440, fully_filled: true, ...wholeAskSide });
  });

  it('BUY beyond the visible depth fills what there is, not fully', async () => {
    expect((await execution('BUY', '500')).data).toEqual({ side: 'BUY', requested_amount: 500, filled_amount: 440, fully_filled: false, ...wholeAskSide });
  });

  it('SELL walks the bids from the highest, through all 25 levels (not a 20-level cut)', async () => {
    // 4 × (0.40 + 0.39 + … + 0.16) = 4 × (25 × 0.28) = 28 for 100 shares: average 0.28;
    // slippage 0.40 − 0.28 = 0.12; bps 0.12 / 0.40 × 10⁴ = 3000. Fills: 0.40 … 0.31, 4 each.
    expect((await execution('SELL', '100')).data).toEqual({
      side: 'SELL',
      requested_amount: 100,
      filled_amount: 100,
      average_price: 0.28,
      best_price: 0.4,
      slippage: 0.12,
      slippage_bps: 3000,
      fully_filled: true,
      fills: Array.from({ length: 10 }, (_, i) => ({ price: Number((0.4 - i / 100).toFixed(2)), size: 4 })),
    });
  });

  it('SELL on the book at the timestamp: before and after the best bid is removed', async () => {
    // At T: 4 × 0.40 + 2 × 0.39 = 1.6 + 0.78 = 2.38 for 6: average 0.396666… → 0.396667;
    // slippage 0.40 − 0.396666… = 0.003333… → 0.003333; bps 0.0033333 / 0.40 × 10⁴ = 83.333… → 83.33.
    expect((await execution('SELL', '6', T + 999)).data).toEqual({
      side: 'SELL',
      requested_amount: 6,
      filled_amount: 6,
      average_price: 0.396667,
      best_price: 0.4,
      slippage: 0.003333,
      slippage_bps: 83.33,
      fully_filled: true,
      fills: [
        { price: 0.4, size: 4 },
        { price: 0.39, size: 2 },
      ],
    });
    // From T + 1000: 4 × 0.39 + 2 × 0.38 = 1.56 + 0.76 = 2.32 for 6: average 0.386666… → 0.386667;
    // slippage 0.003333…; bps 0.0033333 / 0.39 × 10⁴ = 85.470… → 85.47.
    expect((await execution('SELL', '6', T + 1000)).data).toEqual({
      side: 'SELL',
      requested_amount: 6,
      filled_amount: 6,
      average_price: 0.386667,
      best_price: 0.39,
      slippage: 0.003333,
      slippage_bps: 85.47,
      fully_filled: true,
      fills: [
        { price: 0.39, size: 4 },
        { price: 0.38, size: 2 },
      ],
    });
  });
});
