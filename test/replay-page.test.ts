import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/clickhouse/engine.js';
import { LoopBreaks } from '../src/event-loop.js';
import { PageDecoder, ReplayPage } from '../src/replay/replay-page.js';
import { PAGE_SQL, replayPages } from '../src/replay/store-read.js';
import type { ReplayRow } from '../src/replay/wire.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

/**
 * The replay's read window in RowBinary (ReplayPage, PageDecoder): every column type of PAGE_SQL
 * decoded to the stored values, whatever the chunks the engine's bytes arrive in, and a result that
 * ends inside a row is an error, not a shorter replay.
 */
const T0 = Date.UTC(2026, 2, 1);
/** Above 2^32: the UInt64's high half matters. */
const BIG_SEQ = 2 ** 40 + 7;
const ASSETS = ['11', '22'];
const MARKETS = ['0xm1', '0xm2'];
const BIDS = [
  { price: 0.48, size: 10 },
  { price: 0.47, size: 2.5 },
];
const ASKS = [{ price: 0.52, size: 1e-7 }];

let te: TestEngine;
let bytes: Buffer;
const params = {
  ids: ASSETS,
  markets: MARKETS,
  lo: T0,
  hi: T0 + 60_000,
  after_ms: T0 - 1,
  after_seq: 0,
  after_asset: '',
  market_events: ['tick_size_change', 'best_bid_ask', 'market_resolved', 'new_market'],
  cap: 100,
};
/** A market event's raw JSON: multi-byte text, so its length is in bytes, not characters. */
const TICK_RAW = '{"event_type":"tick_size_change","asset_id":"11","market":"0xm1","old_tick_size":"0.01","new_tick_size":"0.001","timestamp":"x","é":"€"}';
const HASH = '0x4f0d1c8f5b0f8e3e7d2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e';

/** The rows stored below, in (t, seq, asset) order, as ReplayRows. */
const EXPECTED: ReplayRow[] = [
  [T0 + 1, 1, 'book', '11', '0xm1', 0, 0, 0, 0, '', BIDS, ASKS, null, ''],
  [T0 + 1, 2, 'price_change', '11', '0xm1', 0.48, 0.52, 0.48, 10, 'BUY', [], [], null, ''],
  [T0 + 1, 2, 'price_change', '22', '0xother', 0.3, 0.31, 0.31, 0, 'SELL', [], [], null, ''],
  [T0 + 2, BIG_SEQ, 'last_trade_price', '22', '0xm2', 0, 0, 0.48000000000000004, 219.217767, 'SELL', [], [], 65535, HASH],
  [T0 + 2, BIG_SEQ + 1, 'tick_size_change', '11', '0xm1', 0, 0, 0, 0, '', [], [], null, TICK_RAW],
  [T0 + 3, 3, 'last_trade_price', '11', '0xm1', 0, 0, 0.5, 3, '', [], [], 0, ''],
  [T0 + 4, 4, 'book', '22', '0xm2', 0, 0, 0, 0, '', BIDS, [], null, ''],
];

beforeAll(async () => {
  te = await createTestEngine();
  const tick = (
    t: number,
    seq: number,
    asset_id: string,
    market: string,
    event: string,
    v: { bb?: number; ba?: number; price?: number; size?: number; side?: string; fee?: number; hash?: string },
  ) =>
    JSON.stringify({
      fee_rate_bps: v.fee,
      tx_hash: v.hash,
      asset_id,
      t,
      seq,
      event,
      side: 'YES',
      best_bid: v.bb ?? 0,
      best_ask: v.ba ?? 0,
      price: v.price ?? 0,
      size: v.size ?? 0,
      book_side: v.side ?? '',
      market,
    });
  await te.engine.insertJsonEachRow(
    'ticks',
    [
      tick(T0 + 1, 1, '11', '0xm1', 'book', {}),
      tick(T0 + 1, 2, '11', '0xm1', 'price_change', { bb: 0.48, ba: 0.52, price: 0.48, size: 10, side: 'BUY' }),
      tick(T0 + 1, 2, '22', '0xother', 'price_change', { bb: 0.3, ba: 0.31, price: 0.31, size: 0, side: 'SELL' }),
      tick(T0 + 2, BIG_SEQ, '22', '0xm2', 'last_trade_price', { price: 0.48000000000000004, size: 219.217767, side: 'SELL', fee: 65535, hash: HASH }),
      tick(T0 + 3, 3, '11', '0xm1', 'last_trade_price', { price: 0.5, size: 3, fee: 0 }),
      tick(T0 + 4, 4, '22', '0xm2', 'book', {}),
      // Another asset, and a row after the window: not read.
      tick(T0 + 2, 5, '33', '0xm3', 'price_change', { price: 0.1, size: 1, side: 'BUY' }),
      tick(T0 + 60_001, 6, '11', '0xm1', 'price_change', { price: 0.1, size: 1, side: 'BUY' }),
    ].join('\n'),
  );
  const snapshot = (t: number, seq: number, asset_id: string, market: string, is_checkpoint: number, bids: unknown[], asks: unknown[]) =>
    JSON.stringify({ asset_id, t, seq, is_checkpoint, market, bids, asks });
  await te.engine.insertJsonEachRow(
    'book_snapshots',
    [snapshot(T0 + 1, 1, '11', '0xm1', 0, BIDS, ASKS), snapshot(T0 + 3, 3, '11', '0xm1', 1, BIDS, ASKS), snapshot(T0 + 4, 4, '22', '0xm2', 0, BIDS, [])].join(
      '\n',
    ),
  );
  await te.engine.insertJsonEachRow(
    'market_events',
    [
      JSON.stringify({ asset_id: '11', t: T0 + 2, seq: BIG_SEQ + 1, event: 'tick_size_change', market: '0xm1', raw: TICK_RAW }),
      // Another asset's: not read.
      JSON.stringify({ asset_id: '33', t: T0 + 2, seq: 9, event: 'best_bid_ask', market: '0xm3', raw: '{}' }),
    ].join('\n'),
  );
  const chunks: Buffer[] = [];
  for await (const chunk of te.engine.stream(PAGE_SQL, 'RowBinary', { params })) chunks.push(chunk as Buffer);
  bytes = Buffer.concat(chunks);
}, 60_000);

afterAll(() => te?.close());

function decode(pieces: Buffer[]): { rows: ReplayRow[]; unfinished: boolean } {
  const page = new ReplayPage(ASSETS, MARKETS);
  const decoder = new PageDecoder(page);
  for (const piece of pieces) decoder.push(piece);
  const rows = Array.from({ length: page.length }, (_, i) => [...page.row(i, [] as unknown as ReplayRow)] as ReplayRow);
  return { rows, unfinished: decoder.unfinished };
}

describe('replay page (RowBinary)', () => {
  it('decodes every column of the stored rows', () => {
    expect(decode([bytes])).toEqual({ rows: EXPECTED, unfinished: false });
  });

  it('decodes the same rows whatever the chunks: cut at every byte, and one byte at a time', () => {
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(decode([bytes.subarray(0, cut), bytes.subarray(cut)]), `cut at ${cut}`).toEqual({ rows: EXPECTED, unfinished: false });
    }
    const single = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
    expect(decode(single)).toEqual({ rows: EXPECTED, unfinished: false });
  });

  it('a result cut inside a row: the decoder says so, and the replay read fails', async () => {
    expect(decode([bytes.subarray(0, bytes.length - 1)]).unfinished).toBe(true);
    // The engine's bytes for the window, less the last one (a connection lost mid-result).
    const truncating = new Proxy(te.engine, {
      get(engine, name: keyof Engine) {
        if (name !== 'bytes') return typeof engine[name] === 'function' ? (engine[name] as (...args: unknown[]) => unknown).bind(engine) : engine[name];
        return async (sql: string, format: string, options: object) => {
          const all = await engine.bytes(sql, format, options);
          return all.subarray(0, all.length - 1);
        };
      },
    });
    const read = async () => {
      for await (const page of replayPages(truncating, { assets: ASSETS, since: T0, to: T0 + 60_000, custom: true }, new AbortController().signal)) void page;
    };
    await expect(read()).rejects.toThrow('replay read ended inside a row');
  });
});

describe('replay page decoded in slices of the event loop (issue 35)', () => {
  /** page.length each time the event loop gets a turn, until `done` is set. */
  function turnsSeen(page: ReplayPage, done: () => boolean): number[] {
    const seen: number[] = [];
    const look = () => {
      seen.push(page.length);
      if (!done()) setImmediate(look);
    };
    setImmediate(look);
    return seen;
  }

  it('waits for a turn before the first row, then decodes 512 rows a turn when each slice is due', async () => {
    const copies = 200; // 1,400 rows: two full slices of 512 and a last one of 376
    const page = new ReplayPage(ASSETS, MARKETS);
    let done = false;
    const seen = turnsSeen(page, () => done);
    // A slice of 0 ms is always due: the decoder gives the loop a turn at every check.
    await new PageDecoder(page).pushInSlices(Buffer.concat(Array(copies).fill(bytes)), new LoopBreaks(0), new AbortController().signal);
    done = true;
    expect(seen).toEqual([0, 512, 1024]);
    expect(page.length).toBe(EXPECTED.length * copies);
    const rows = Array.from({ length: page.length }, (_, i) => [...page.row(i, [] as unknown as ReplayRow)]);
    expect(rows).toEqual(Array.from({ length: copies }, () => EXPECTED).flat());
  });

  it('stops with the abort at the next slice: nothing more is decoded', async () => {
    const page = new ReplayPage(ASSETS, MARKETS);
    const abort = new AbortController();
    let done = false;
    const seen = turnsSeen(page, () => done);
    setImmediate(() => setImmediate(() => abort.abort(new Error('client left'))));
    const decoding = new PageDecoder(page).pushInSlices(Buffer.concat(Array(200).fill(bytes)), new LoopBreaks(0), abort.signal);
    await expect(decoding).rejects.toThrow('client left');
    done = true;
    expect(page.length).toBe(512);
    expect(seen[0]).toBe(0);
  });
});

describe('replay pages read one after another', () => {
  /**
   * The read alternates two pages and keeps their columns (store-read.ts): the third window is decoded
   * into the first one's page. Its rows must be what a fresh page decodes from one read of the whole
   * range: nothing of an earlier window (a hash, a market, levels, a length) may show through.
   */
  it('are every window’s rows exactly, pages reused', async () => {
    const T1 = T0 + 10 * 86_400_000;
    const row = (t: number, seq: number, event: string, market: string, hash = '') =>
      JSON.stringify({ asset_id: '44', t, seq, event, side: 'YES', best_bid: 0.4, best_ask: 0.6, price: 0.5, size: seq, book_side: '', market, tx_hash: hash });
    const lines = [
      // The first window (60 s): trades with a hash, in two markets (whichever asset_stats calls the
      // asset's usual one, two rows name the other, at positions the third window's rows take).
      ...[0, 1, 2, 3].map((i) => row(T1 + i, 100 + i, 'last_trade_price', i < 2 ? '0xq' : '0xm4', HASH)),
      // The second (16 min from there): price changes.
      ...[0, 1, 2, 3].map((i) => row(T1 + 61_000 + i, 200 + i, 'price_change', '0xm4')),
      // The third (256 min): trades without a hash, then a book.
      ...[0, 1, 2].map((i) => row(T1 + 30 * 60_000 + i, 300 + i, 'last_trade_price', i < 2 ? '0xm4' : '0xq')),
      row(T1 + 30 * 60_000 + 9, 309, 'book', '0xm4'),
    ];
    await te.engine.insertJsonEachRow('ticks', lines.join('\n'));
    await te.engine.insertJsonEachRow(
      'book_snapshots',
      JSON.stringify({ asset_id: '44', t: T1 + 30 * 60_000 + 9, seq: 309, is_checkpoint: 0, market: '0xm4', bids: BIDS, asks: ASKS }),
    );

    const read: ReplayRow[] = [];
    let pages = 0;
    for await (const page of replayPages(te.engine, { assets: ['44'], since: T1, to: T1 + 86_400_000, custom: true }, new AbortController().signal)) {
      pages++;
      for (let i = 0; i < page.length; i++) read.push([...page.row(i, [] as unknown as ReplayRow)] as ReplayRow);
    }
    const whole = await te.engine.bytes(PAGE_SQL, 'RowBinary', {
      params: { ...params, ids: ['44'], markets: ['0xm4'], lo: T1, hi: T1 + 86_400_000, after_ms: T1 - 1, cap: 1000 },
    });
    const fresh = new ReplayPage(['44'], ['0xm4']);
    new PageDecoder(fresh).push(whole);
    expect(pages).toBe(3);
    expect(read).toEqual(Array.from({ length: fresh.length }, (_, i) => [...fresh.row(i, [] as unknown as ReplayRow)]));
    expect(read.map((r) => r[13])).toEqual([HASH, HASH, HASH, HASH, '', '', '', '', '', '', '', '']);
  });
});
