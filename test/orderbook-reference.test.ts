import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENTS_READ } from '../src/book-history/cache.js';
import { replayLines } from '../src/ingest/frame-files.js';
import { type FrameStream, generateFrames } from './support/book-frames.js';
import { BookModel, type ModelBook, modelExecution } from './support/book-model.js';
import { type OrderbookApp, startOrderbookApp } from './support/orderbook-app.js';

/**
 * The service against an independent model: a generated stream of raw frames is replayed through
 * the real ingest path (with frequent checkpoints), and every answer must equal the model's book.
 */
let ob: OrderbookApp;
let stream: FrameStream;
const model = new BookModel();

interface Probe {
  asset: string;
  at: number;
}
const probes: Probe[] = [];

beforeAll(async () => {
  stream = generateFrames(20260704, 3000);
  for (const line of stream.lines) model.push(line);
  ob = await startOrderbookApp(stream.end + 86_400_000);
  const summary = await replayLines(ob.te.engine, stream.lines, { sourceId: 'orderbook-reference', checkpoints: { changes: 25, ms: 60_000 } });
  expect(summary.normalizer.malformed).toBe(0);
  expect(summary.normalizer.checkpoints).toBeGreaterThan(50);

  // Deterministic probes: exactly at events, 1 ms before them, between them, before the first.
  let state = 7;
  const rand = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (const asset of [...stream.assets, stream.tradeOnlyAsset]) {
    const times = model.times(asset);
    const first = times[0] ?? stream.start;
    probes.push({ asset, at: first - 1 }, { asset, at: first }, { asset, at: stream.end + 5000 });
    for (let i = 0; i < 60; i++) {
      const t = times.length ? times[Math.floor(rand() * times.length)] : stream.start + Math.floor(rand() * (stream.end - stream.start));
      const kind = i % 3;
      probes.push({ asset, at: kind === 0 ? t : kind === 1 ? t - 1 : stream.start + Math.floor(rand() * (stream.end - stream.start)) });
    }
  }
}, 120_000);

afterAll(() => ob?.close());

/** Runs `fn` over items, 8 requests in flight at a time (the engine pool has 4 sessions). */
async function inBatches<T>(items: T[], fn: (item: T) => Promise<void>) {
  for (let i = 0; i < items.length; i += 8) await Promise.all(items.slice(i, i + 8).map(fn));
}

function expectedBook(asset: string, book: ModelBook, limit: number) {
  return {
    market: book.market,
    asset_id: asset,
    timestamp: book.timestamp,
    datetime: new Date(book.timestamp).toISOString().replace('T', ' ').replace('Z', ''),
    best_bid: book.best_bid,
    best_ask: book.best_ask,
    bids: book.bids.slice(0, limit),
    asks: book.asks.slice(0, limit),
  };
}

async function checkOrderbooks() {
  let found = 0;
  let missing = 0;
  await inBatches(probes, async ({ asset, at }) => {
    const book = model.bookAt(asset, at);
    const limit = at % 5 === 0 ? 3 : 100;
    const res = await ob.get(`/v1/orderbook?asset_id=${asset}&timestamp=${at}&limit=${limit}`);
    if (!book) {
      missing++;
      expect(res.status, `${asset}@${at}`).toBe(404);
      expect(res.body).toEqual({ detail: { message: expect.any(String) } });
      return;
    }
    found++;
    expect(res.status, `${asset}@${at}`).toBe(200);
    expect(res.body, `${asset}@${at}`).toEqual({ success: true, data: expectedBook(asset, book, limit) });
  });
  return { found, missing };
}

/** The decimal a price arithmetic result stands for (0.083 - 0.082 → 0.001, not 0.0010000000000000009). */
const decimal = (x: number) => Number(x.toFixed(10));

async function checkPrices() {
  let noisy = 0;
  await inBatches(probes, async ({ asset, at }) => {
    const book = model.bookAt(asset, at);
    const res = await ob.get(`/v1/price?asset_id=${asset}&timestamp=${at}`);
    if (!book) return expect(res.status).toBe(404);
    expect(res.body.data, `${asset}@${at}`).toEqual({
      asset_id: asset,
      timestamp: book.timestamp,
      datetime: expectedBook(asset, book, 1).datetime,
      best_bid: book.best_bid,
      best_ask: book.best_ask,
      midpoint: decimal((book.best_bid + book.best_ask) / 2),
      spread: decimal(book.best_ask - book.best_bid),
    });
    if (book.best_ask - book.best_bid !== res.body.data.spread) noisy++;
  });
  // Plain float subtraction would have answered differently at some of these timestamps.
  expect(noisy).toBeGreaterThan(0);
}

async function checkExecutions() {
  const cases: { asset: string; at: number; side: 'BUY' | 'SELL'; amount: number }[] = [];
  probes.forEach(({ asset, at }, i) => {
    const book = model.bookAt(asset, at);
    for (const side of ['BUY', 'SELL'] as const) {
      const levels = book ? (side === 'BUY' ? book.asks : book.bids) : [];
      let depth = 0;
      for (const l of levels) depth += l.size;
      // Below the first level, inside the book, exactly the visible depth, and beyond it.
      const amounts = [levels.length ? levels[0].size / 3 : 5, depth * 0.6 || 7.5, depth || 1, depth + 123.45];
      cases.push({ asset, at, side, amount: Number(amounts[i % 4].toPrecision(12)) });
      if (i % 4 === 2) cases.push({ asset, at, side, amount: depth || 1 });
    }
  });
  let full = 0;
  let partial = 0;
  let empty = 0;
  await inBatches(cases, async ({ asset, at, side, amount }) => {
    const book = model.bookAt(asset, at);
    const res = await ob.get(`/v1/execution-price?asset_id=${asset}&side=${side}&amount=${amount}&timestamp=${at}`);
    if (!book) return expect(res.status).toBe(404);
    const expected = modelExecution(book, side, amount);
    if (expected.fully_filled) full++;
    else if (expected.fills.length) partial++;
    else empty++;
    expect(res.status).toBe(200);
    expect(res.body.data, `${side} ${amount} ${asset}@${at}`).toEqual(expected);
  });
  return { full, partial, empty };
}

describe('order book reconstruction against the reference model', () => {
  it('answers /v1/orderbook exactly at ≥ 200 timestamps (at events, 1 ms before, between)', async () => {
    expect(probes.length).toBeGreaterThanOrEqual(200);
    const { found, missing } = await checkOrderbooks();
    expect(found).toBeGreaterThan(200);
    // Before each asset's first book, and the trade-only asset throughout.
    expect(missing).toBeGreaterThan(60);
  }, 300_000);

  it('covers books made of changes alone, more of them than a point read holds, and books after a snapshot', async () => {
    // Asset 3001's book starts from price_change alone (no book, so no checkpoint) for hundreds of
    // changes: from its EVENTS_READ-th event until its first snapshot, a point read (the cache's,
    // while a fill runs) finds no snapshot among the events it reads, and the cache's read from the
    // asset's first event answers. The probes above include such times.
    const [bounds] = await ob.te.engine.rows<{ from_ms: number; until_ms: number }>(
      `SELECT (SELECT toUnixTimestamp64Milli(t) FROM book_events WHERE asset_id = '3001' ORDER BY t, seq LIMIT 1 OFFSET {n:UInt32}) AS from_ms,
              (SELECT toUnixTimestamp64Milli(min(t)) FROM book_events WHERE asset_id = '3001' AND kind != 'price_change') AS until_ms
       SETTINGS output_format_json_quote_64bit_integers = 0`,
      { params: { n: EVENTS_READ - 1 } },
    );
    const onChangesAlone = probes.filter((p) => p.asset === '3001' && p.at >= bounds.from_ms && p.at < bounds.until_ms);
    const afterSnapshots = probes.filter((p) => p.asset !== '3001' && p.at > stream.start + 60_000);
    expect(onChangesAlone.length).toBeGreaterThan(5);
    expect(afterSnapshots.length).toBeGreaterThan(100);
  });

  it('answers /v1/price exactly at the same timestamps', checkPrices, 300_000);

  it('answers /v1/execution-price exactly for BUY and SELL below, at and beyond the visible depth', async () => {
    const { full, partial, empty } = await checkExecutions();
    expect(full).toBeGreaterThan(100);
    expect(partial).toBeGreaterThan(50);
    expect(empty).toBeGreaterThan(0);
  }, 300_000);

  it('samples the book with interval exactly as the model does, skipping points before the first book', async () => {
    for (const asset of [...stream.assets, stream.tradeOnlyAsset]) {
      const since = stream.start - 4321;
      const interval = 6007;
      const res = await ob.get(`/v1/orderbook/range?asset_id=${asset}&since=${since}&until=${stream.end}&interval=${interval}&limit=1000&depth=100`);
      const expected = [];
      for (let p = since; p <= stream.end; p += interval) {
        const book = model.bookAt(asset, p);
        if (book) expected.push(expectedBook(asset, book, 100));
      }
      expect(res.body, asset).toEqual({ success: true, data: expected, meta: { count: expected.length } });
      if (asset !== stream.tradeOnlyAsset) expect(expected.length).toBeGreaterThan(100);

      const limited = await ob.get(`/v1/orderbook/range?asset_id=${asset}&since=${since}&until=${stream.end}&interval=${interval}&limit=5&depth=2`);
      expect(limited.body.data).toEqual(expected.slice(0, 5).map((b) => ({ ...b, bids: b.bids.slice(0, 2), asks: b.asks.slice(0, 2) })));
    }
  });

  it('returns the exchange snapshots in [since, until] without interval', async () => {
    for (const asset of stream.assets) {
      const times = model.bookEventTimes(asset);
      expect(times.length).toBeGreaterThan(2);
      const since = times[1];
      const until = times[times.length - 1];
      const res = await ob.get(`/v1/orderbook/range?asset_id=${asset}&since=${since}&until=${until}&depth=100&limit=1000`);
      // The book after a `book` event is the book at its time when no other event shares that time.
      const expected = times.filter((t) => t >= since && t <= until).map((t) => model.bookAt(asset, t)!);
      expect(res.body.meta.count).toBe(expected.length);
      res.body.data.forEach((b: any, i: number) => {
        expect(b.timestamp).toBe(times[i + 1]);
        if (model.times(asset).filter((t) => t === b.timestamp).length === 1) expect(b).toEqual(expectedBook(asset, expected[i], 100));
      });
    }
  });

  it('answers /v1/prices-history with the midpoint after the last tick of each bucket, t in seconds', async () => {
    for (const fidelity of [1, 60, 300]) {
      for (const asset of [...stream.assets, stream.tradeOnlyAsset]) {
        const res = await ob.get(`/v1/prices-history?asset_id=${asset}&start=${stream.start}&end=${stream.end}&fidelity=${fidelity}&limit=10000`);
        const lastInBucket = new Map<number, number>();
        for (const t of model.tickTimes(asset)) lastInBucket.set(Math.floor(t / (1000 * fidelity)) * fidelity, t);
        const expected = [...lastInBucket].map(([t, last]) => {
          const book = model.bookAt(asset, last);
          return { t, p: book ? decimal((book.best_bid + book.best_ask) / 2) : 0.5 };
        });
        expect(res.body, `${asset} fidelity ${fidelity}`).toEqual({ success: true, data: expected, meta: { count: expected.length, fidelity } });
        const first = await ob.get(`/v1/prices-history?asset_id=${asset}&start=${stream.start}&end=${stream.end}&fidelity=${fidelity}&limit=3`);
        expect(first.body.data).toEqual(expected.slice(0, 3));
      }
    }
  });

  it('gives the same answers after every checkpoint is dropped', async () => {
    const count = async (sql: string) => (await ob.te.engine.rows<{ n: number }>(sql))[0].n;
    const checkpoints = () =>
      count("SELECT toUInt32((SELECT count() FROM book_snapshots WHERE is_checkpoint = 1) + (SELECT count() FROM book_events WHERE kind = 'checkpoint')) AS n");
    expect(await checkpoints()).toBeGreaterThan(100);
    await ob.te.engine.command('ALTER TABLE book_snapshots DELETE WHERE is_checkpoint = 1 SETTINGS mutations_sync = 2');
    await ob.te.engine.command("ALTER TABLE book_events DELETE WHERE kind = 'checkpoint' SETTINGS mutations_sync = 2");
    expect(await checkpoints()).toBe(0);
    await checkOrderbooks();
    await checkPrices();
    await checkExecutions();
  }, 600_000);
});
