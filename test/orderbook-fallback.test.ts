import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEGMENTS_READ } from '../src/book-history/cache.js';
import { replayLines } from '../src/ingest/frame-files.js';
import { BookModel, type ModelBook } from './support/book-model.js';
import { type OrderbookApp, startOrderbookApp } from './support/orderbook-app.js';

/**
 * The fallback reconstruction WITH a snapshot: a `book`, then more `price_change` events than the
 * segment cache reads forward from a snapshot (SEGMENTS_READ) and no checkpoints, so a lookup after
 * them is beyond every read of book_events and is answered from book_snapshots and ticks
 * (bookStateAt). Every answer is compared with the naive replay of the spec (test/support/book-model.ts).
 *
 * Each region (a `book`, then CHANGES frames) starts with levels no change ever touches, so a book
 * rebuilt from the last events alone (without its snapshot) misses them; the second region's `book`
 * drops every level of the first, so a book merged into the previous one shows them. Within one
 * millisecond a level is set and then removed again, so the arrival order decides the answer.
 */
const ASSET = '7001';
const MARKET = '0xfa11bac';
const T0 = Date.UTC(2026, 5, 20, 12);
/** Change frames per region: each holds 2 to 5 events, so the snapshot is out of reach long before the end. */
const CHANGES = Math.ceil(SEGMENTS_READ / 2) + 300;
const REGION_MS = (CHANGES + 10) * 1000;

const book = (t: number, bids: [string, string][], asks: [string, string][]) =>
  JSON.stringify({
    event_type: 'book',
    asset_id: ASSET,
    market: MARKET,
    timestamp: String(t),
    hash: 'h',
    bids: bids.map(([price, size]) => ({ price, size })),
    asks: asks.map(([price, size]) => ({ price, size })),
  });

const changes = (t: number, items: [side: 'BUY' | 'SELL', price: string, size: string][]) =>
  JSON.stringify({
    asset_id: ASSET,
    market: MARKET,
    timestamp: String(t),
    hash: 'h',
    event_type: 'price_change',
    changes: items.map(([side, price, size]) => ({ price, side, size })),
  });

/** Frame times of the changes of region r, first to last. */
const changeTimes = (r: number) => Array.from({ length: CHANGES }, (_, i) => T0 + r * REGION_MS + 1000 * (i + 1));

function regionLines(r: number): string[] {
  const start = T0 + r * REGION_MS;
  // Region 0's snapshot levels are at 0.0x / 0.9x, region 1's at 0.1x / 0.8x: disjoint, and never touched by a change.
  const lines = [
    r === 0
      ? book(
          start,
          [
            ['0.05', '100'],
            ['0.06', '200'],
            ['0.07', '300'],
          ],
          [
            ['0.95', '100'],
            ['0.94', '200'],
          ],
        )
      : book(
          start,
          [
            ['0.15', '11'],
            ['0.16', '22'],
          ],
          [
            ['0.85', '33'],
            ['0.84', '44'],
            ['0.83', '55'],
          ],
        ),
  ];
  changeTimes(r).forEach((t, i) => {
    const bid = (0.3 + (i % 10) / 100).toFixed(2);
    const ask = (0.7 - (i % 10) / 100).toFixed(2);
    const items: ['BUY' | 'SELL', string, string][] = [
      ['BUY', bid, String(i + 1)],
      ['SELL', ask, `${i + 1}.5`],
    ];
    // Set and removed again in the same millisecond: present only if arrival order is reversed.
    if (i % 7 === 3) items.push(['BUY', '0.45', '9'], ['BUY', '0.45', '0']);
    // Early in the region (within the cache's read from the snapshot): remove a snapshot level.
    if (i === 4) items.push(['SELL', r === 0 ? '0.94' : '0.84', '0']);
    lines.push(changes(t, items));
  });
  return lines;
}

const LINES = [...regionLines(0), ...regionLines(1)];

let ob: OrderbookApp;
const model = new BookModel();

beforeAll(async () => {
  for (const line of LINES) model.push(line);
  ob = await startOrderbookApp(T0 + 10 * 86_400_000);
  const summary = await replayLines(ob.te.engine, LINES, { sourceId: 'orderbook-fallback', checkpoints: false });
  expect(summary.normalizer.checkpoints).toBe(0);
});

afterAll(() => ob?.close());

function expectedBook(book: ModelBook) {
  return {
    market: book.market,
    asset_id: ASSET,
    timestamp: book.timestamp,
    datetime: new Date(book.timestamp).toISOString().replace('T', ' ').replace('Z', ''),
    best_bid: book.best_bid,
    best_ask: book.best_ask,
    bids: book.bids,
    asks: book.asks,
  };
}

/** book_events rows of the asset in (snapshot, at]: SEGMENTS_READ or more means the lookup at `at` needs the fallback. */
async function eventsSinceSnapshot(at: number): Promise<number> {
  const [row] = await ob.te.engine.rows<{ n: number }>(
    `SELECT toUInt32(count()) AS n FROM book_events
     WHERE asset_id = {asset:String} AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
       AND t > (SELECT max(t) FROM book_events WHERE asset_id = {asset:String} AND kind = 'book' AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC'))`,
    { params: { asset: ASSET, at } },
  );
  return row.n;
}

describe('order book fallback reconstruction (a snapshot, then more changes than one read)', () => {
  it('stores no checkpoint: the two `book` events are the only snapshots', async () => {
    const rows = await ob.te.engine.rows<{ k: string; n: number }>(
      `SELECT toString(kind) AS k, toUInt32(count()) AS n FROM book_events WHERE asset_id = {asset:String} GROUP BY k ORDER BY k`,
      { params: { asset: ASSET } },
    );
    const items = LINES.reduce((n, l) => n + ((JSON.parse(l) as { changes?: unknown[] }).changes?.length ?? 0), 0);
    expect(rows).toEqual([
      { k: 'book', n: 2 },
      { k: 'price_change', n: items },
    ]);
  });

  it('answers /v1/orderbook exactly as the naive replay along both regions, at changes and between them', async () => {
    // Every 61st change, and the last 5 of each region, exactly at the change and half-way to the next.
    const probes = [...changeTimes(0), ...changeTimes(1)].filter((_, i) => i % 61 === 0 || i % CHANGES >= CHANGES - 5).flatMap((t) => [t, t + 500]);
    probes.push(T0, T0 + REGION_MS, T0 + 2 * REGION_MS + 5000);
    let fallback = 0;
    for (let i = 0; i < probes.length; i += 8) {
      await Promise.all(
        probes.slice(i, i + 8).map(async (at) => {
          const res = await ob.get(`/v1/orderbook?asset_id=${ASSET}&timestamp=${at}&limit=100`);
          expect(res.status, `@${at}`).toBe(200);
          expect(res.body, `@${at}`).toEqual({ success: true, data: expectedBook(model.bookAt(ASSET, at)!) });
          if ((await eventsSinceSnapshot(at)) >= SEGMENTS_READ) fallback++;
        }),
      );
    }
    // About a fifth of each region's events lie past the reach of the cache's reads.
    expect(fallback).toBeGreaterThan(probes.length / 6);
  }, 300_000);

  it('answers the latest book (no timestamp) from the fallback, with the second snapshot and not the first', async () => {
    const end = T0 + 2 * REGION_MS;
    expect(await eventsSinceSnapshot(end)).toBeGreaterThanOrEqual(SEGMENTS_READ);
    const latest = model.bookAt(ASSET, end)!;
    // The second region's untouched snapshot levels are there (0.15/0.16 bids, 0.85/0.83 asks; 0.84 was removed)
    // and none of the first region's (0.0x bids, 0.9x asks).
    expect(latest.bids.filter((l) => l.price < 0.3)).toEqual([
      { price: 0.16, size: 22 },
      { price: 0.15, size: 11 },
    ]);
    expect(latest.asks.filter((l) => l.price > 0.7)).toEqual([
      { price: 0.83, size: 55 },
      { price: 0.85, size: 33 },
    ]);
    expect(latest.bids.some((l) => l.price === 0.45)).toBe(false);
    const res = await ob.get(`/v1/orderbook?asset_id=${ASSET}&limit=100`);
    expect(res.body).toEqual({ success: true, data: expectedBook(latest) });
  });
});
