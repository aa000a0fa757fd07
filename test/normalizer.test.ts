import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { CheckpointPolicy, Level, OrderBook } from '../src/book/index.js';
import type { BookCheckRow, CaptureRow, MarketEventRow, MarketRow, SnapshotRow, TickRow } from '../src/clickhouse/rows.js';
import { parseGammaMarkets } from '../src/ingest/gamma.js';
import { fileSeq, Normalizer } from '../src/ingest/normalizer.js';
import { receiveTimeOf, receiveTimePrefix } from '../src/ingest/receive-time.js';
import { fixturePath } from './support/fixtures.js';

/** Levels as [price, size] pairs: the expectations below read as the wire's levels do. */
type Pair = [number, number];
const pairs = (levels: readonly Level[]): Pair[] => levels.map((l) => [l.price, l.size]);
const sides = (book: OrderBook) => ({ bids: pairs(book.levels('bid')), asks: pairs(book.levels('ask')) });
type PairSnapshot = Omit<SnapshotRow, 'bids' | 'asks'> & { bids: Pair[]; asks: Pair[] };

const frames = readFileSync(fixturePath('polymarket/ws-frames.jsonl'), 'utf8').split('\n');
const gamma = JSON.parse(readFileSync(fixturePath('polymarket/gamma-markets.json'), 'utf8')) as unknown[];

function run(lines: readonly string[], opts: { markets?: MarketRow[]; checkpoints?: CheckpointPolicy | false; sourceId?: string } = {}) {
  const ticks: TickRow[] = [];
  const snapshots: PairSnapshot[] = [];
  const markets: MarketRow[] = [];
  const checks: BookCheckRow[] = [];
  const captures: CaptureRow[] = [];
  const marketEvents: MarketEventRow[] = [];
  const normalizer = new Normalizer(
    {
      tick: (r) => ticks.push(r),
      snapshot: (r) => snapshots.push({ ...r, bids: pairs(r.bids), asks: pairs(r.asks) }),
      market: (r) => markets.push(r),
      bookCheck: (r) => checks.push(r),
      capture: (r) => captures.push(r),
      marketEvent: (r) => marketEvents.push(r),
    },
    { seq: fileSeq(opts.sourceId ?? 'test'), checkpoints: opts.checkpoints },
  );
  if (opts.markets) normalizer.addMarkets(opts.markets);
  for (const line of lines) normalizer.push(line);
  return { ticks, snapshots, markets, checks, captures, marketEvents, stats: normalizer.stats, normalizer };
}

/** seq of the `item`-th tick of line `line` under source id `sourceId`. */
function seqOf(line: number, item: number, sourceId = 'test'): number {
  return fileSeq(sourceId)(0, 0) + line * 4096 + item;
}

const A = '25245433628208476987364023432306599125597948324625578977436890641930158259698';
const B = '20168250870314270898487593595943592687458358996170785976290704639743788087191';
const C = '350977769852917329387037893294763093471844346281449484439085576212613048126';
const D = '114122071509644379678018727908709560226618148003371446110114509806601493071694';
const E = '71321045679252212594626385532706912750332728571942532289631379312455583992563';
const F = '52114319501245915516055106046884209969926127482827954674443846427813813222426';
const M1 = '0x0936baff284871821b1ab5c64d33d67f117392dba34d461fe04360df893dfde4';
const M4 = '0x6bd56627aa21311850825edb27e53434a0e17a4f782be0086bc07f71eee00d0d';
const M9 = '0x6a67b9d828d53862160e470329ffea5246f338ecfffdf2cab45211ec578b0347';
const M10 = '0x5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1';
const NVDA = '0x311d0c4b6671ab54af4970c06fcf58662516f5168997bdda209ec3db5aa6b0c1';

describe('the sample capture (ws-frames.jsonl + gamma-markets.json)', () => {
  const { ticks, snapshots, markets, stats } = run(frames, { markets: parseGammaMarkets(gamma).rows });

  it('yields exactly the ticks docs/INGEST.md §2 prescribes, in arrival order', () => {
    const s = (line: number, item: number) => seqOf(line, item);
    expect(ticks).toEqual([
      // line 1: initial dump, two books (best of the new book, price/size 0)
      {
        asset_id: A,
        t: 1766481546487,
        seq: s(1, 0),
        event: 'book',
        side: 'UNKNOWN',
        best_bid: 0.49,
        best_ask: 0.5,
        price: 0,
        size: 0,
        book_side: '',
        market: M1,
      },
      {
        asset_id: B,
        t: 1766481546487,
        seq: s(1, 1),
        event: 'book',
        side: 'UNKNOWN',
        best_bid: 0.5,
        best_ask: 0.51,
        price: 0,
        size: 0,
        book_side: '',
        market: M1,
      },
      // line 2: current price_change, one item per asset, best bid/ask from the items
      {
        asset_id: A,
        t: 1766481546776,
        seq: s(2, 0),
        event: 'price_change',
        side: 'UNKNOWN',
        best_bid: 0.49,
        best_ask: 0.5,
        price: 0.49,
        size: 55,
        book_side: 'BUY',
        market: M1,
      },
      {
        asset_id: B,
        t: 1766481546776,
        seq: s(2, 1),
        event: 'price_change',
        side: 'UNKNOWN',
        best_bid: 0.5,
        best_ask: 0.51,
        price: 0.51,
        size: 55,
        book_side: 'SELL',
        market: M1,
      },
      // line 3: B's book re-sent
      {
        asset_id: B,
        t: 1766481547845,
        seq: s(3, 0),
        event: 'book',
        side: 'UNKNOWN',
        best_bid: 0.49,
        best_ask: 0.5,
        price: 0,
        size: 0,
        book_side: '',
        market: M1,
      },
      // line 4: book listing asks descending: best ask is the lowest, 0.08
      {
        asset_id: C,
        t: 1786604072222,
        seq: s(4, 0),
        event: 'book',
        side: 'UNKNOWN',
        best_bid: 0.07,
        best_ask: 0.08,
        price: 0,
        size: 0,
        book_side: '',
        market: M4,
      },
      // lines 5-8: new_market, market_resolved, best_bid_ask, tick_size_change: no ticks
      // line 9: trade on an asset without a book; its fee rate ("0") is kept, it carries no transaction hash
      {
        asset_id: D,
        t: 1750428146322,
        seq: s(9, 0),
        event: 'last_trade_price',
        side: 'UNKNOWN',
        best_bid: 0,
        best_ask: 1,
        price: 0.456,
        size: 219.217767,
        book_side: 'BUY',
        market: M9,
        fee_rate_bps: 0,
      },
      // line 10: price_change on assets without books; the items carry best bid/ask
      {
        asset_id: E,
        t: 1757908892351,
        seq: s(10, 0),
        event: 'price_change',
        side: 'UNKNOWN',
        best_bid: 0.5,
        best_ask: 1,
        price: 0.5,
        size: 200,
        book_side: 'BUY',
        market: M10,
      },
      {
        asset_id: F,
        t: 1757908892351,
        seq: s(10, 1),
        event: 'price_change',
        side: 'UNKNOWN',
        best_bid: 0,
        best_ask: 0.5,
        price: 0.5,
        size: 200,
        book_side: 'SELL',
        market: M10,
      },
      // line 11: legacy changes[] without best bid/ask: from E's book (bid 0.5 from line 10, ask 0.4 now)
      {
        asset_id: E,
        t: 1729084877448,
        seq: s(11, 0),
        event: 'price_change',
        side: 'UNKNOWN',
        best_bid: 0.5,
        best_ask: 0.4,
        price: 0.4,
        size: 3300,
        book_side: 'SELL',
        market: M10,
      },
    ]);
  });

  it('stores every book event as an exchange snapshot with sorted levels', () => {
    expect(
      snapshots.map((r) => [r.asset_id, r.t, r.seq, r.is_checkpoint, r.market, r.bids.length, r.asks.length, r.tick_size, r.last_trade_price, r.local_t]),
    ).toEqual([
      // The dump's books state a last trade price ("0.500") but no tick size; line 3 neither; line 4 both.
      // No line carries a receive time.
      [A, 1766481546487, seqOf(1, 0), 0, M1, 49, 50, undefined, 0.5, undefined],
      [B, 1766481546487, seqOf(1, 1), 0, M1, 50, 49, undefined, 0.5, undefined],
      [B, 1766481547845, seqOf(3, 0), 0, M1, 49, 50, undefined, undefined, undefined],
      [C, 1786604072222, seqOf(4, 0), 0, M4, 7, 57, 0.01, 0.92, undefined],
    ]);
    expect(snapshots[0].bids.slice(0, 2)).toEqual([
      [0.49, 60],
      [0.48, 172.92],
    ]);
    expect(snapshots[0].bids.at(-1)).toEqual([0.01, 3769.8]);
    expect(snapshots[0].asks.slice(0, 2)).toEqual([
      [0.5, 16],
      [0.51, 182.92],
    ]);
    expect(snapshots[0].asks.at(-1)).toEqual([0.99, 3641.8]);
    // Line 3 replaces B's book: line 2's change to 0.51 is gone.
    expect(snapshots[2].bids.slice(0, 2)).toEqual([
      [0.49, 150.92],
      [0.48, 212],
    ]);
    expect(snapshots[2].asks.slice(0, 2)).toEqual([
      [0.5, 28.84],
      [0.51, 50],
    ]);
    expect(snapshots[3].bids).toEqual([
      [0.07, 182528.55],
      [0.06, 219685.67],
      [0.05, 507106.18],
      [0.04, 171213.7],
      [0.03, 37268.67],
      [0.02, 70281.2],
      [0.01, 3149725.72],
    ]);
    expect(snapshots[3].asks.slice(0, 3)).toEqual([
      [0.08, 228198.28],
      [0.09, 153220.41],
      [0.1, 93315.63],
    ]);
    for (const r of snapshots) {
      expect(r.bids.every((l, i) => i === 0 || l[0] < r.bids[i - 1][0])).toBe(true);
      expect(r.asks.every((l, i) => i === 0 || l[0] > r.asks[i - 1][0])).toBe(true);
    }
  });

  it('emits a market row per token from Gamma and from new_market', () => {
    // gamma-markets.json: feesEnabled, takerBaseFee, makerBaseFee and feeSchedule {exponent, rate, takerOnly, rebateRate}.
    const GAMMA_FEES = {
      fees_enabled: true,
      taker_base_fee: 1000,
      maker_base_fee: 1000,
      fee_rate: 0.04,
      fee_exponent: 1,
      fee_taker_only: true,
      fee_rebate_rate: 0.25,
    };
    const newsom = 'Will Gavin Newsom win the 2028 Democratic presidential nomination?';
    const newsomSlug = 'will-gavin-newsom-win-the-2028-democratic-presidential-nomination-568';
    const newsomMarket = '0x0f49db97f71c68b1e42a6d16e3de93d85dbf7d4148e3f018eb79e88554be9f75';
    const nvdaQ = 'Will NVIDIA (NVDA) close above $240 end of January?';
    expect(markets).toEqual([
      {
        asset_id: '54533043819946592547517511176940999955633860128497669742211153063842200957669',
        market: newsomMarket,
        outcome: 'Yes',
        question: newsom,
        slug: newsomSlug,
        min_order_size: 5,
        tick_size: 0.001,
        neg_risk: true,
        fees: GAMMA_FEES,
        updated_at: Date.parse('2026-06-14T11:04:26.005Z'),
      },
      {
        asset_id: '87854174148074652060467921081181402357467303721471806610111179101805869578687',
        market: newsomMarket,
        outcome: 'No',
        question: newsom,
        slug: newsomSlug,
        min_order_size: 5,
        tick_size: 0.001,
        neg_risk: true,
        fees: GAMMA_FEES,
        updated_at: Date.parse('2026-06-14T11:04:26.005Z'),
      },
      {
        asset_id: '76043073756653678226373981964075571318267289248134717369284518995922789326425',
        market: NVDA,
        outcome: 'Yes',
        question: nvdaQ,
        slug: 'nvda-above-240-on-january-30-2026',
        updated_at: 1766790415550,
      },
      {
        asset_id: '31690934263385727664202099278545688007799199447969475608906331829650099442770',
        market: NVDA,
        outcome: 'No',
        question: nvdaQ,
        slug: 'nvda-above-240-on-january-30-2026',
        updated_at: 1766790415550,
      },
    ]);
  });

  it('counts frames, events per type, market events and unknown', () => {
    expect(stats).toEqual({
      lines: 12, // the trailing newline leaves an empty last line
      frames: 11,
      captures: 0,
      pongs: 0,
      events: { book: 4, price_change: 3, last_trade_price: 1, new_market: 1, market_resolved: 1, tick_size_change: 1, best_bid_ask: 1, unknown: 0 },
      ticks: 10,
      snapshots: 4,
      checkpoints: 0,
      markets: 4,
      marketEvents: 6,
      unknown: 0,
      malformed: 0,
      malformedLines: [],
    });
  });
});

const ASSET = '111';
const book = (t: number, bids: [string, string][], asks: [string, string][], asset = ASSET) =>
  JSON.stringify({
    event_type: 'book',
    asset_id: asset,
    market: '0xm',
    timestamp: String(t),
    bids: bids.map(([price, size]) => ({ price, size })),
    asks: asks.map(([price, size]) => ({ price, size })),
  });
const legacy = (t: number, changes: [string, string, string][], asset = ASSET) =>
  JSON.stringify({
    event_type: 'price_change',
    asset_id: asset,
    market: '0xm',
    timestamp: String(t),
    changes: changes.map(([price, side, size]) => ({ price, side, size })),
  });
const trade = (t: number, price: string, size: string, asset = ASSET) =>
  JSON.stringify({ event_type: 'last_trade_price', asset_id: asset, market: '0xm', price, side: 'BUY', size, fee_rate_bps: '0', timestamp: String(t) });
const brief = (r: TickRow) => [r.event, r.best_bid, r.best_ask, r.price, r.size];

describe('book state', () => {
  it('size "0" removes a level and the best price moves to the next one', () => {
    const { ticks, normalizer } = run([
      book(
        1000,
        [
          ['0.4', '10'],
          ['0.5', '20'],
        ],
        [
          ['0.6', '30'],
          ['0.7', '40'],
        ],
      ),
      legacy(1001, [['0.5', 'BUY', '0']]),
      legacy(1002, [['0.6', 'SELL', '0']]),
      legacy(1003, [['0.45', 'BUY', '5']]),
      legacy(1004, [['0.45', 'BUY', '7']]),
    ]);
    expect(ticks.map(brief)).toEqual([
      ['book', 0.5, 0.6, 0, 0],
      ['price_change', 0.4, 0.6, 0.5, 0],
      ['price_change', 0.4, 0.7, 0.6, 0],
      ['price_change', 0.45, 0.7, 0.45, 5],
      ['price_change', 0.45, 0.7, 0.45, 7],
    ]);
    expect(sides(normalizer.book(ASSET)!)).toEqual({
      bids: [
        [0.45, 7],
        [0.4, 10],
      ],
      asks: [[0.7, 40]],
    });
  });

  it('an empty side has best bid 0 and best ask 1; size-0 book levels are never stored', () => {
    const { ticks, snapshots } = run([
      book(1000, [], []),
      book(
        2000,
        [
          ['0.3', '0'],
          ['0.2', '5'],
        ],
        [['0.8', '0']],
      ),
      legacy(2001, [['0.2', 'BUY', '0']]),
      legacy(2002, [['0.9', 'SELL', '1']]),
      legacy(2003, [['0.9', 'SELL', '0']]),
    ]);
    expect(ticks.map(brief)).toEqual([
      ['book', 0, 1, 0, 0],
      ['book', 0.2, 1, 0, 0],
      ['price_change', 0, 1, 0.2, 0],
      ['price_change', 0, 0.9, 0.9, 1],
      ['price_change', 0, 1, 0.9, 0],
    ]);
    expect(snapshots.map((r) => [r.bids, r.asks])).toEqual([
      [[], []],
      [[[0.2, 5]], []],
    ]);
  });

  it('a price_change before any book yields a tick and starts a book from empty', () => {
    const { ticks, snapshots, normalizer } = run([
      legacy(5000, [
        ['0.3', 'BUY', '100'],
        ['0.6', 'SELL', '50'],
      ]),
    ]);
    expect(ticks.map(brief)).toEqual([
      ['price_change', 0.3, 1, 0.3, 100],
      ['price_change', 0.3, 0.6, 0.6, 50],
    ]);
    expect(snapshots).toEqual([]);
    expect(sides(normalizer.book(ASSET)!)).toEqual({ bids: [[0.3, 100]], asks: [[0.6, 50]] });
  });

  it('a last_trade_price reports the current book, changes nothing and creates no book', () => {
    const { ticks, normalizer } = run([trade(1000, '0.42', '12.5'), book(2000, [['0.4', '1']], [['0.45', '2']]), trade(2001, '0.45', '2')]);
    expect(ticks.map(brief)).toEqual([
      ['last_trade_price', 0, 1, 0.42, 12.5],
      ['book', 0.4, 0.45, 0, 0],
      ['last_trade_price', 0.4, 0.45, 0.45, 2],
    ]);
    expect(sides(normalizer.book(ASSET)!)).toEqual({ bids: [[0.4, 1]], asks: [[0.45, 2]] });
    expect(run([trade(1000, '0.42', '12.5')]).normalizer.book(ASSET)).toBeUndefined();
  });

  it('accepts the oldest flat price_change and current items without best bid/ask', () => {
    const { ticks } = run([
      book(1000, [['0.4', '1']], [['0.6', '1']]),
      JSON.stringify({ event_type: 'price_change', asset_id: ASSET, market: '0xm', timestamp: '1001', hash: 'h', price: '0.5', side: 'BUY', size: '3' }),
      JSON.stringify({
        market: '0xm',
        timestamp: '1002',
        event_type: 'price_change',
        price_changes: [{ asset_id: ASSET, price: '0.55', size: '4', side: 'SELL', hash: 'h' }],
      }),
    ]);
    expect(ticks.map(brief)).toEqual([
      ['book', 0.4, 0.6, 0, 0],
      ['price_change', 0.5, 0.6, 0.5, 3],
      ['price_change', 0.5, 0.55, 0.55, 4],
    ]);
  });
});

describe('checkpoints', () => {
  const policy = { changes: 3, ms: 60_000 };

  it('stores the grounded book after N changes, with t/seq of the last applied change', () => {
    const { ticks, snapshots, stats } = run(
      [
        book(1000, [['0.4', '1']], [['0.6', '1']]),
        legacy(1001, [['0.41', 'BUY', '2']]),
        legacy(1002, [
          ['0.6', 'SELL', '0'],
          ['0.59', 'SELL', '3'],
        ]),
        legacy(1003, [['0.42', 'BUY', '1']]),
      ],
      { checkpoints: policy },
    );
    expect(snapshots.map((r) => [r.t, r.seq, r.is_checkpoint, r.bids, r.asks])).toEqual([
      [1000, ticks[0].seq, 0, [[0.4, 1]], [[0.6, 1]]],
      [
        1002,
        ticks[3].seq,
        1,
        [
          [0.41, 2],
          [0.4, 1],
        ],
        [[0.59, 3]],
      ],
    ]);
    expect(stats.checkpoints).toBe(1);
    expect(stats.snapshots).toBe(1);
  });

  it('stores one when a change comes 60 s of event time after the last snapshot', () => {
    const { snapshots } = run(
      [book(1000, [['0.4', '1']], []), legacy(60_999, [['0.3', 'BUY', '1']]), legacy(61_000, [['0.2', 'BUY', '1']]), legacy(61_001, [['0.1', 'BUY', '1']])],
      {
        checkpoints: policy,
      },
    );
    expect(snapshots.map((r) => [r.t, r.is_checkpoint, r.bids.length])).toEqual([
      [1000, 0, 1],
      [61_000, 1, 3],
    ]);
  });

  it('never checkpoints a book started by price_change alone, until a book event grounds it', () => {
    const changes = Array.from({ length: 10 }, (_, i) => legacy(1000 + i, [[`0.${i + 1}`, 'BUY', '1']]));
    const ungrounded = run([...changes, legacy(200_000, [['0.11', 'BUY', '1']])], { checkpoints: policy });
    expect(ungrounded.snapshots).toEqual([]);

    const grounded = run([...changes, book(300_000, [['0.5', '1']], []), ...changes.slice(0, 3)], { checkpoints: policy });
    expect(grounded.snapshots.map((r) => [r.t, r.is_checkpoint])).toEqual([
      [300_000, 0],
      [1002, 1],
    ]);
  });

  it('follows the default policy of 200 changes, and can be switched off', () => {
    const lines = [book(1000, [['0.5', '1']], []), ...Array.from({ length: 400 }, (_, i) => legacy(1001 + i, [['0.4', 'BUY', String(i + 1)]]))];
    expect(run(lines).snapshots.map((r) => [r.t, r.is_checkpoint])).toEqual([
      [1000, 0],
      [1200, 1],
      [1400, 1],
    ]);
    expect(run(lines, { checkpoints: false }).snapshots).toHaveLength(1);
  });
});

describe('labels', () => {
  it('ticks carry the outcome label upper-cased once metadata is known, UNKNOWN before', () => {
    const newMarket = JSON.stringify({
      event_type: 'new_market',
      market: '0xm',
      question: 'Up or down?',
      slug: 'up-or-down',
      assets_ids: [ASSET, '222'],
      outcomes: ['Up', 'Down'],
      timestamp: '1500',
    });
    const { ticks, markets } = run(
      [trade(1000, '0.5', '1'), newMarket, trade(2000, '0.5', '1'), trade(2001, '0.5', '1', '222'), trade(2002, '0.5', '1', '333')],
      {
        markets: [{ asset_id: '333', market: '0xg', outcome: 'Yes', question: 'q', slug: 's', updated_at: 0 }],
      },
    );
    expect(ticks.map((r) => [r.asset_id, r.side])).toEqual([
      [ASSET, 'UNKNOWN'],
      [ASSET, 'UP'],
      ['222', 'DOWN'],
      ['333', 'YES'],
    ]);
    expect(markets.map((r) => [r.asset_id, r.outcome, r.updated_at])).toEqual([
      ['333', 'Yes', 0],
      [ASSET, 'Up', 1500],
      ['222', 'Down', 1500],
    ]);
  });
});

describe('robustness', () => {
  it('counts malformed lines with their line numbers and keeps going', () => {
    const { ticks, stats } = run([
      book(1000, [['0.4', '1']], [['0.6', '1']]), // 1
      '{"event_type":"book",', // 2: bad JSON
      'PONG', // 3: keep-alive answer, ignored
      '', // 4: blank, ignored
      JSON.stringify({ event_type: 'last_trade_price', market: '0xm', price: '0.5', size: '1', timestamp: '1001' }), // 5: no asset_id
      trade(1002, 'abc', '1'), // 6: non-numeric price
      `[${trade(1003, '0.5', '1')},${trade(1004, '0.5', '')}]`, // 7: one good, one bad event
      legacy(1005, [
        ['0.45', 'BUY', '1'],
        ['0.55', 'HOLD', '1'],
      ]), // 8: bad side: nothing applied
      JSON.stringify({ event_type: 'price_change', asset_id: ASSET, timestamp: 'yesterday', changes: [] }), // 9: bad timestamp
      '42', // 10: not an object
      JSON.stringify({ price: '0.5' }), // 11: no event_type
      JSON.stringify({ event_type: 'something_new', timestamp: '1' }), // 12: unknown, not malformed
      trade(1006, '0.5', '2'), // 13
    ]);
    expect(stats.malformed).toBe(8);
    expect(stats.malformedLines).toEqual([2, 5, 6, 7, 8, 9, 10, 11]);
    expect(stats.pongs).toBe(1);
    expect(stats.unknown).toBe(1);
    expect(stats.events.unknown).toBe(1);
    expect(ticks.map((r) => [r.t, ...brief(r)])).toEqual([
      [1000, 'book', 0.4, 0.6, 0, 0],
      [1003, 'last_trade_price', 0.4, 0.6, 0.5, 1],
      [1006, 'last_trade_price', 0.4, 0.6, 0.5, 2],
    ]);
  });

  it('keeps only the first 10 malformed line numbers', () => {
    const { stats } = run(Array.from({ length: 15 }, () => 'not json'));
    expect(stats.malformed).toBe(15);
    expect(stats.malformedLines).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });
});

describe('seq', () => {
  it('is unique and follows arrival order for equal t, and the same input gives the same values', () => {
    const lines = [
      book(1000, [['0.4', '1']], []),
      legacy(1000, [
        ['0.41', 'BUY', '1'],
        ['0.42', 'BUY', '1'],
      ]),
      trade(1000, '0.4', '1'),
    ];
    const first = run(lines, { sourceId: 'file-a' }).ticks.map((r) => r.seq);
    expect(first).toEqual([seqOf(1, 0, 'file-a'), seqOf(2, 0, 'file-a'), seqOf(2, 1, 'file-a'), seqOf(3, 0, 'file-a')]);
    expect(run(lines, { sourceId: 'file-a' }).ticks.map((r) => r.seq)).toEqual(first);
    expect(first.every((s) => s < 2 ** 53)).toBe(true);
    const other = run(lines, { sourceId: 'file-b' }).ticks.map((r) => r.seq);
    expect(other).not.toEqual(first);
  });

  it('keeps increasing when a line holds more than 4096 ticks', () => {
    const big = `[${Array.from({ length: 5000 }, (_, i) => trade(1000, '0.5', String(i + 1))).join(',')}]`;
    const { ticks } = run([big, trade(1000, '0.5', '1')]);
    const seqs = ticks.map((r) => r.seq);
    expect(new Set(seqs).size).toBe(5001);
    expect(seqs.every((s, i) => i === 0 || s > seqs[i - 1])).toBe(true);
  });
});

const extra = readFileSync(fixturePath('polymarket/market-events.jsonl'), 'utf8').split('\n').filter(Boolean);
const NVDA_YES = '76043073756653678226373981964075571318267289248134717369284518995922789326425';
const NVDA_NO = '31690934263385727664202099278545688007799199447969475608906331829650099442770';
/** The rows list only what each event states: absent members are NULL / '' when stored. */
const G = '0x0005c0d312de0be897668695bae9f32b624b4a1ae8b140c49f08447fcc74f442';
const BBA = '85354956062430465315924116860125388538595433819574542752031640332592237464430';
const TSC = '115474063863764126958837769719736461272619491980773624567012766320777398670353';
const TSC_MARKET = '0xbacdf04bf7f22a670dc4fb408878ec56b76f9934599829455b9371693ba84b8b';

describe('market events (docs/INGEST.md §2): tick_size_change, best_bid_ask, market_resolved, new_market', () => {
  it('the sample capture: one row per asset each event names, its JSON kept as received, seq from the ticks’ counter', () => {
    const { marketEvents } = run(frames);
    expect(marketEvents).toEqual([
      // line 5: new_market names two tokens; the 2025-12 event states its tick but no fees
      { asset_id: NVDA_YES, t: 1766790415550, seq: seqOf(5, 0), event: 'new_market', market: NVDA, raw: frames[4], outcome: 'Yes', new_tick_size: 0.01 },
      { asset_id: NVDA_NO, t: 1766790415550, seq: seqOf(5, 0), event: 'new_market', market: NVDA, raw: frames[4], outcome: 'No', new_tick_size: 0.01 },
      // line 6: the same market resolves to Yes: a row per token, each naming the winner
      ...[NVDA_YES, NVDA_NO].map((asset_id) => ({
        asset_id,
        t: 1766790415550,
        seq: seqOf(6, 0),
        event: 'market_resolved',
        market: NVDA,
        raw: frames[5],
        winning_asset_id: NVDA_YES,
        winning_outcome: 'Yes',
      })),
      // line 7: best_bid_ask
      { asset_id: BBA, t: 1766789469958, seq: seqOf(7, 0), event: 'best_bid_ask', market: G, raw: frames[6], best_bid: 0.73, best_ask: 0.77, spread: 0.04 },
      // line 8: the tick size change 0.01 → 0.001
      {
        asset_id: TSC,
        t: 1739068041853,
        seq: seqOf(8, 0),
        event: 'tick_size_change',
        market: TSC_MARKET,
        raw: frames[7],
        old_tick_size: 0.01,
        new_tick_size: 0.001,
      },
    ]);
  });

  it('a new_market’s fee schedule (numbers as strings on the wire) and a trade’s fee rate and transaction hash', () => {
    const { marketEvents, ticks, markets } = run(extra);
    const [yes, no] = JSON.parse(extra[0]).assets_ids as string[];
    const fees = { fees_enabled: true, taker_base_fee: 1000, fee_rate: 0.04, fee_exponent: 1, fee_taker_only: true, fee_rebate_rate: 0.25 };
    const market = '0x9a5e2d0c1b7f4e3a8c6d5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706';
    expect(marketEvents).toEqual([
      { asset_id: yes, t: 1766790415551, seq: seqOf(1, 0), event: 'new_market', market, raw: extra[0], outcome: 'Yes', new_tick_size: 0.01, fees },
      { asset_id: no, t: 1766790415551, seq: seqOf(1, 0), event: 'new_market', market, raw: extra[0], outcome: 'No', new_tick_size: 0.01, fees },
    ]);
    // The market rows a new_market gives are the labels (metadata rows carry no fees: those are history).
    expect(markets.map((m) => [m.asset_id, m.outcome, m.fees])).toEqual([
      [yes, 'Yes', undefined],
      [no, 'No', undefined],
    ]);
    expect(ticks).toEqual([
      {
        asset_id: yes,
        t: 1766790416002,
        seq: seqOf(2, 0),
        event: 'last_trade_price',
        side: 'YES',
        best_bid: 0,
        best_ask: 1,
        price: 0.63,
        size: 4.25,
        book_side: 'SELL',
        market,
        fee_rate_bps: 17,
        tx_hash: '0x3f9a1c2e5d7b8a60e4c2d1f0b9a8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a190',
      },
    ]);
  });

  it('an event inside an array frame keeps its own JSON (re-serialized: the frame holds others)', () => {
    const resolved = JSON.parse(frames[5]);
    const tick = JSON.parse(frames[7]);
    const { marketEvents, stats } = run([JSON.stringify([tick, resolved])]);
    expect(stats.malformed).toBe(0);
    expect(marketEvents.map((r) => [r.event, r.raw, r.seq])).toEqual([
      ['tick_size_change', JSON.stringify(tick), seqOf(1, 0)],
      ['market_resolved', JSON.stringify(resolved), seqOf(1, 1)],
      ['market_resolved', JSON.stringify(resolved), seqOf(1, 1)],
    ]);
  });

  it('an event missing or mangling what it needs is malformed and stores nothing', () => {
    const tsc = JSON.parse(frames[7]);
    const bba = JSON.parse(frames[6]);
    const nm = JSON.parse(extra[0]);
    const { marketEvents, stats } = run([
      JSON.stringify({ ...tsc, new_tick_size: undefined }), // 1: no new tick
      JSON.stringify({ ...tsc, new_tick_size: '0' }), // 2: a tick of 0
      JSON.stringify({ ...bba, best_bid: 'abc' }), // 3
      JSON.stringify({ ...nm, fee_schedule: { ...nm.fee_schedule, rate: 'four' } }), // 4
      JSON.stringify({ ...nm, fees_enabled: 'yes' }), // 5
      JSON.stringify({ ...JSON.parse(frames[5]), assets_ids: undefined, winning_asset_id: undefined }), // 6: names no asset
      JSON.stringify({ ...JSON.parse(extra[1]), fee_rate_bps: '70000' }), // 7: not a UInt16
      JSON.stringify({ ...bba, best_bid: undefined, best_ask: undefined, spread: undefined }), // 8: fine, states nothing more
    ]);
    expect(stats.malformedLines).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(marketEvents.map((r) => [r.event, r.best_bid, r.best_ask])).toEqual([['best_bid_ask', undefined, undefined]]);
  });
});

describe('receive time (docs/INGEST.md §3, §4)', () => {
  const at = (prefix: string, line: string) => `${prefix} ${line}`;
  it('a line prefixed with its receive time gives every row of the frame that local_t, in µs (the 7th decimal dropped)', () => {
    const { ticks, snapshots, marketEvents, stats } = run([
      at('2025-12-23T09:19:06.4931239Z', frames[0]),
      frames[1],
      at('2026-02-09T02:27:21.9000001Z', frames[7]),
    ]);
    expect(stats.malformed).toBe(0);
    const us = Date.UTC(2025, 11, 23, 9, 19, 6) * 1000 + 493123;
    expect(ticks.map((r) => [r.event, r.local_t])).toEqual([
      ['book', us],
      ['book', us],
      ['price_change', undefined],
      ['price_change', undefined],
    ]);
    expect(snapshots.map((r) => r.local_t)).toEqual([us, us]);
    expect(marketEvents.map((r) => r.local_t)).toEqual([Date.UTC(2026, 1, 9, 2, 27, 21) * 1000 + 900000]);
  });

  it('the recorder’s stamp (push with receivedAt) does the same, and a line’s own prefix wins', () => {
    const sink: TickRow[] = [];
    const normalizer = new Normalizer(
      { tick: (r) => sink.push(r), snapshot() {}, market() {}, bookCheck() {}, capture() {}, marketEvent() {} },
      { seq: fileSeq('stamp') },
    );
    normalizer.push(frames[8], 1_750_428_146_322_777);
    normalizer.push(at('2025-06-20T14:02:26.3229990Z', frames[8]), 5);
    normalizer.push(frames[8]);
    expect(sink.map((r) => r.local_t)).toEqual([1_750_428_146_322_777, 1_750_428_146_322_999, undefined]);
  });

  it('a prefix that is not exactly the 28-character form, or not a real instant, makes the line malformed', () => {
    const { ticks, stats } = run([
      at('2025-12-23T09:19:06.493123Z', frames[8]), // 6 decimals
      at('2025-13-23T09:19:06.4931230Z', frames[8]), // month 13
      at('2025-02-30T09:19:06.4931230Z', frames[8]), // 30 February
      `2025-12-23T09:19:06.4931230Z${frames[8]}`, // no space
      at('2025-12-23T09:19:06.4931230Z', frames[8]), // fine
    ]);
    expect(stats.malformedLines).toEqual([1, 2, 3, 4]);
    expect(ticks.map((r) => r.local_t)).toEqual([Date.UTC(2025, 11, 23, 9, 19, 6) * 1000 + 493123]);
  });

  it('receiveTimePrefix writes what receiveTimeOf reads, for any µs', () => {
    for (const us of [0, 1, 999_999, 1_766_481_546_487_123, 1_766_481_546_000_000, 4_102_444_799_999_999]) {
      const prefix = receiveTimePrefix(us);
      expect(prefix).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}0Z $/);
      expect(receiveTimeOf(`${prefix}{}`)).toBe(us);
    }
    expect(receiveTimePrefix(1_766_481_546_487_123)).toBe('2025-12-23T09:19:06.4871230Z ');
  });
});
