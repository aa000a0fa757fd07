import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { BookCheckRow, CaptureRow, SnapshotRow, TickRow } from '../src/clickhouse/rows.js';
import { fileSeq } from '../src/ingest/normalizer.js';
import { isKalshiAssetId, kalshiAssetId, tickerOf } from '../src/venues/kalshi/ids.js';
import { countUnits, KalshiNormalizer, priceUnits } from '../src/venues/kalshi/normalizer.js';
import { fixturePath } from './support/fixtures.js';

/**
 * Kalshi's WebSocket messages → rows (docs/KALSHI.md §2), on Kalshi's own AsyncAPI examples and a made-up
 * session in the same shapes (test/fixtures/kalshi/PROVENANCE.md). Every expected value below is worked
 * out by hand from the messages: bids = YES bids, asks = 1 − NO bids, sizes the exact sums of the deltas.
 */
type Pair = [number, number];

function run(lines: readonly string[], receivedAt?: number) {
  const ticks: TickRow[] = [];
  const snapshots: (Omit<SnapshotRow, 'bids' | 'asks'> & { bids: Pair[]; asks: Pair[] })[] = [];
  const checks: BookCheckRow[] = [];
  const captures: CaptureRow[] = [];
  const n = new KalshiNormalizer(
    {
      tick: (r) => ticks.push(r),
      snapshot: (r) => snapshots.push({ ...r, bids: r.bids.map((l) => [l.price, l.size]), asks: r.asks.map((l) => [l.price, l.size]) }),
      market: () => {},
      marketEvent: () => {},
      bookCheck: (r) => checks.push(r),
      capture: (r) => captures.push(r),
    },
    { seq: fileSeq('kalshi-test'), checkpoints: false },
  );
  const gaps = [];
  for (const line of lines) {
    n.push(line, receivedAt);
    gaps.push(...n.takeGaps());
  }
  const tick = ({ asset_id, t, event, best_bid, best_ask, price, size, book_side, side, local_t, tx_hash }: TickRow) => ({
    asset_id,
    t,
    event,
    best_bid,
    best_ask,
    price,
    size,
    book_side,
    side,
    ...(local_t === undefined ? {} : { local_t }),
    ...(tx_hash === undefined ? {} : { tx_hash }),
  });
  return { n, ticks: ticks.map(tick), snapshots, checks, captures, gaps };
}

const lines = (file: string) =>
  readFileSync(fixturePath(`kalshi/${file}`), 'utf8')
    .split('\n')
    .filter(Boolean);

describe('kalshi ids', () => {
  it('name a market kalshi:<ticker> and read it back; Polymarket ids are not Kalshi ids', () => {
    expect(kalshiAssetId('KXBTCD-26MAY1417-T94999.99')).toBe('kalshi:KXBTCD-26MAY1417-T94999.99');
    expect(tickerOf('kalshi:FED-23DEC-T3.00')).toBe('FED-23DEC-T3.00');
    expect(isKalshiAssetId('kalshi:FED-23DEC-T3.00')).toBe(true);
    expect(isKalshiAssetId('25245433628208476987364023432306599125597948324625578977436890641930158259698')).toBe(false);
    expect(isKalshiAssetId('kalshi:')).toBe(false);
    expect(isKalshiAssetId('kalshi:A B')).toBe(false);
    expect(() => kalshiAssetId('')).toThrow();
    expect(() => tickerOf('123')).toThrow();
  });
});

describe('fixed-point fields', () => {
  it('read prices in 1/10,000 dollar and counts in 1/100 contract, exactly', () => {
    expect([priceUnits('0.0800'), priceUnits('0.960'), priceUnits('0.9999'), priceUnits('1'), priceUnits('0.00001'), priceUnits('1.0001')]).toEqual([
      800, 9600, 9999, 10_000, -1, -1,
    ]);
    expect([countUnits('300.00'), countUnits('-54.00'), countUnits('2.5'), countUnits('0.01'), countUnits('1.001'), countUnits(5)]).toEqual([
      30_000,
      -5400,
      250,
      1,
      NaN,
      NaN,
    ]);
  });
});

describe("Kalshi's AsyncAPI examples", () => {
  const T0 = 1_669_149_840_000;
  const { n, ticks, snapshots } = run(lines('asyncapi-examples.jsonl'), T0 * 1000);
  const FED = 'kalshi:FED-23DEC-T3.00';

  it('store the snapshot as a book: bids = YES bids, asks = 1 − NO bids, best levels first', () => {
    expect(snapshots).toEqual([
      expect.objectContaining({
        asset_id: FED,
        market: FED,
        t: T0,
        is_checkpoint: 0,
        bids: [
          [0.22, 333],
          [0.08, 300],
        ],
        asks: [
          [0.44, 146],
          [0.46, 20],
        ],
      }),
    ]);
  });

  it('give a book tick, a price_change whose level the delta empties, and a trade at the YES price with the NO taker as SELL', () => {
    expect(ticks).toEqual([
      { asset_id: FED, t: T0, event: 'book', best_bid: 0.22, best_ask: 0.44, price: 0, size: 0, book_side: '', side: 'YES', local_t: T0 * 1000 },
      // -54 at a YES price with no level: the level's new size is 0 (nothing rests there).
      {
        asset_id: FED,
        t: 1_669_149_841_000,
        event: 'price_change',
        best_bid: 0.22,
        best_ask: 0.44,
        price: 0.96,
        size: 0,
        book_side: 'BUY',
        side: 'YES',
        local_t: T0 * 1000,
      },
      {
        asset_id: 'kalshi:HIGHNY-22DEC23-B53.5',
        t: 1_669_149_841_000,
        event: 'last_trade_price',
        best_bid: 0,
        best_ask: 1,
        price: 0.36,
        size: 136,
        book_side: 'SELL',
        side: 'YES',
        local_t: T0 * 1000,
        // Kalshi's trade_id, in the column of Polymarket's transaction hash.
        tx_hash: 'd91bc706-ee49-470d-82d8-11418bda6fed',
      },
    ]);
    expect(n.stats).toMatchObject({ malformed: 0, events: { orderbook_snapshot: 1, orderbook_delta: 1, trade: 1, control: 3, other: 1 } });
  });
});

describe('a recorded session (stream.jsonl)', () => {
  const base = 1_778_778_000_000;
  const A = 'kalshi:KXBTCD-26MAY1417-T94999.99';
  const { n, ticks, snapshots, checks, gaps } = run(lines('stream.jsonl'));
  const us = (ms: number) => ms * 1000;

  it('keeps both ladders exactly: deltas add to levels, empty them, open one at 0.9999 (an ask at 0.0001)', () => {
    expect(ticks).toEqual([
      { asset_id: A, t: base + 100, event: 'book', best_bid: 0.43, best_ask: 0.44, price: 0, size: 0, book_side: '', side: 'YES', local_t: us(base + 100) },
      {
        asset_id: A,
        t: base + 200,
        event: 'price_change',
        best_bid: 0.43,
        best_ask: 0.44,
        price: 0.43,
        size: 7.75,
        book_side: 'BUY',
        side: 'YES',
        local_t: us(base + 205),
      },
      {
        asset_id: A,
        t: base + 300,
        event: 'price_change',
        best_bid: 0.43,
        best_ask: 0.45,
        price: 0.44,
        size: 0,
        book_side: 'SELL',
        side: 'YES',
        local_t: us(base + 305),
      },
      {
        asset_id: A,
        t: base + 400,
        event: 'price_change',
        best_bid: 0.43,
        best_ask: 0.0001,
        price: 0.0001,
        size: 3,
        book_side: 'SELL',
        side: 'YES',
        local_t: us(base + 405),
      },
      {
        asset_id: A,
        t: base + 500,
        event: 'last_trade_price',
        best_bid: 0.43,
        best_ask: 0.0001,
        price: 0.43,
        size: 2,
        book_side: 'BUY',
        side: 'YES',
        local_t: us(base + 505),
        tx_hash: '5e0b8f6c-2f4e-4d1a-8c3b-7a9e1d2c4b60',
      },
      // The delta after the gap is not applied; the new subscription's snapshot replaces the book.
      { asset_id: A, t: base + 710, event: 'book', best_bid: 0.4, best_ask: 1, price: 0, size: 0, book_side: '', side: 'YES', local_t: us(base + 710) },
    ]);
  });

  it('reports the seq gap once, with the markets of the subscription, and skips that subscription after it', () => {
    expect(gaps).toEqual([{ sid: 1, expected: 5, got: 6, assets: [A] }]);
    // The message after the gap on the stopped subscription is skipped too, not reported as a second gap.
    expect(n.stats).toMatchObject({ gaps: 1, skipped: 2, malformed: 0, snapshots: 2 });
  });

  it('stores both snapshots, the second drift-checked against the book the deltas kept', () => {
    expect(snapshots.map((s) => [s.t, s.bids, s.asks])).toEqual([
      [
        base + 100,
        [
          [0.43, 5.5],
          [0.42, 10],
        ],
        [
          [0.44, 1.25],
          [0.45, 7],
        ],
      ],
      [base + 710, [[0.4, 1]], []],
    ]);
    // Kept: bids 0.43×7.75, 0.42×10; asks 0.0001×3, 0.45×7. Stated: bid 0.40×1. Five levels differ.
    expect(checks.map((c) => [c.verdict, c.levels_differing])).toEqual([
      ['unchecked', 0],
      ['drifted', 5],
    ]);
  });

  it('skips a delta of a market with no snapshot yet: its level size is unknown', () => {
    const early = run([
      JSON.stringify({
        type: 'orderbook_delta',
        sid: 9,
        seq: 1,
        msg: { market_ticker: 'X', market_id: 'm', price_dollars: '0.5000', delta_fp: '3.00', side: 'yes', ts_ms: 1 },
      }),
    ]);
    expect(early.ticks).toEqual([]);
    expect(early.n.stats).toMatchObject({ skipped: 1, malformed: 0, ticks: 0 });
  });

  it('reads the taker from taker_outcome_side, else taker_book_side (bid = yes), else the deprecated taker_side', () => {
    const trade = (sides: Record<string, string>) =>
      JSON.stringify({
        type: 'trade',
        sid: 2,
        msg: { trade_id: 't', market_ticker: 'X', yes_price_dollars: '0.5000', count_fp: '1.00', ts_ms: 1, ...sides },
      });
    const got = run([
      trade({ taker_outcome_side: 'no', taker_book_side: 'ask', taker_side: 'no' }),
      trade({ taker_outcome_side: 'yes' }),
      trade({ taker_book_side: 'ask' }),
      trade({ taker_book_side: 'bid', taker_side: 'no' }),
      trade({ taker_side: 'yes' }),
      // A bad canonical field is not papered over by the legacy one.
      trade({ taker_outcome_side: 'maybe', taker_side: 'yes' }),
      trade({ taker_book_side: 'constructor' }),
      trade({}),
    ]);
    expect(got.ticks.map((t) => t.book_side)).toEqual(['SELL', 'BUY', 'SELL', 'BUY', 'BUY']);
    expect(got.n.stats).toMatchObject({ malformed: 3 });
  });

  it('counts a message missing a required field as malformed and goes on', () => {
    const bad = run([
      '{"type":"orderbook_delta","sid":1,"seq":1,"msg":{"market_ticker":"X","price_dollars":"0.5","side":"yes"}}',
      '{"type":"trade","sid":2,"msg":{"market_ticker":"X","yes_price_dollars":"0.5","count_fp":"1.00","taker_side":"maybe","ts_ms":1}}',
      '{"type":"trade","sid":2,"msg":{"trade_id":7,"market_ticker":"X","yes_price_dollars":"0.5","count_fp":"1.00","taker_side":"yes","ts_ms":1}}',
      'not json',
    ]);
    expect(bad.n.stats).toMatchObject({ malformed: 4, ticks: 0 });
  });
});
