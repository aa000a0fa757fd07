import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { receiveTimePrefix } from '../src/ingest/receive-time.js';
import { generateFrames } from './support/book-frames.js';
import { BookModel, type ModelBook } from './support/book-model.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { fixturePath } from './support/fixtures.js';

/**
 * GET /v1/tardis/datasets/… (docs/TARDIS.md §1): the five CSV files of one asset and UTC day, checked
 * byte for byte against references written here from Tardis's documented formats and the plain book
 * model (test/support/book-model.ts), never from src/. The frames carry receive stamps that differ
 * from their exchange times, so `local_timestamp` is checked too.
 */
let app: DataApp;
const model = new BookModel();
/** Frames from 23:50 to ~00:15 UTC: the 2025-12-18 files open with the book as that day began. */
const MIDNIGHT = Date.UTC(2025, 11, 18);
const DAY_PATH = '2025/12/18';
const frames = generateFrames(20261126, 2500, MIDNIGHT - 10 * 60_000);
/** Every event of an asset in arrival order: exchange ms, receive µs, and the event itself. */
interface Arrived {
  t: number;
  local: number;
  e: Record<string, unknown>;
}
const arrived = new Map<string, Arrived[]>();
const ASSET = '1001';
const HASH = `0x${'ab'.repeat(32)}`;

function stamp(line: string, i: number): { line: string; local: number } {
  const first = JSON.parse(line);
  const t = Number((Array.isArray(first) ? first[0] : first).timestamp);
  // A receive time after the exchange's, by a varying number of µs (so the last event of a
  // millisecond has its own).
  const local = t * 1000 + 100 + ((i * 37) % 800);
  return { line: receiveTimePrefix(local) + line, local };
}

function remember(line: string, local: number): void {
  const frame = JSON.parse(line);
  for (const e of Array.isArray(frame) ? frame : [frame]) {
    const t = Number(e.timestamp);
    // The three price_change generations, as the model reads them.
    const items =
      e.event_type === 'price_change' ? ((e.price_changes ?? e.changes ?? [e]) as Record<string, unknown>[]).map((p) => ({ ...p, event_type: 'item' })) : [e];
    for (const item of items) {
      const asset = String(item.asset_id ?? e.asset_id);
      if (!arrived.has(asset)) arrived.set(asset, []);
      arrived.get(asset)!.push({ t, local, e: item });
    }
  }
}

beforeAll(async () => {
  // Some trades carry a transaction hash (the Tardis trade id), as Polymarket's do now.
  // Frames only (the generator's keep-alives carry no time).
  const lines = frames.lines
    .filter((l) => l.startsWith('{') || l.startsWith('['))
    .map((l, i) => (l.includes('"last_trade_price"') && i % 2 === 0 ? l.replace('"event_type"', `"transaction_hash":"${HASH}","event_type"`) : l));
  const stamped = lines.map((l, i) => stamp(l, i));
  for (const [i, s] of stamped.entries()) {
    model.push(lines[i]);
    remember(lines[i], s.local);
  }
  app = await startDataApp(MIDNIGHT + 3 * 86_400_000);
  const summary = await replayLines(
    app.te.engine,
    stamped.map((s) => s.line),
    { sourceId: 'tardis-datasets', checkpoints: { changes: 25, ms: 60_000 } },
  );
  expect(summary.normalizer.malformed).toBe(0);
}, 300_000);

afterAll(async () => {
  await app?.close();
});

async function file(type: string, day = DAY_PATH, asset = ASSET, headers: Record<string, string> = {}) {
  const res = await app.get(`/v1/tardis/datasets/polymarket/${type}/${day}/${asset}.csv.gz`, headers);
  const body = Buffer.from(await res.arrayBuffer());
  return { res, body, text: res.status === 200 ? gunzipSync(body).toString('latin1') : body.toString() };
}

const fixtureHeader = (name: string) => readFileSync(fixturePath(`tardis/${name}`), 'latin1').split('\n')[0];

describe('headers', () => {
  it('are byte for byte those of real Tardis files', async () => {
    const snapshot5 = fixtureHeader('binance-futures_book_snapshot_5_BTCUSDT.csv');
    // book_snapshot_25: the same interleaved pattern for levels 0-24 (docs/TARDIS.md §1.3).
    const levels = (n: number) => Array.from({ length: n }, (_, i) => `asks[${i}].price,asks[${i}].amount,bids[${i}].price,bids[${i}].amount`).join(',');
    expect(snapshot5).toBe(`exchange,symbol,timestamp,local_timestamp,${levels(5)}`);
    const expected: Record<string, string> = {
      incremental_book_L2: fixtureHeader('deribit_incremental_book_L2_BTC-PERPETUAL.csv'),
      trades: fixtureHeader('bitmex_trades_XBTUSD.csv'),
      quotes: fixtureHeader('huobi-dm-swap_quotes_BTC-USD.csv'),
      book_snapshot_5: snapshot5,
      book_snapshot_25: `exchange,symbol,timestamp,local_timestamp,${levels(25)}`,
    };
    for (const [type, header] of Object.entries(expected)) {
      // A day with no data: the header line alone.
      const { res, text } = await file(type, '2025/12/10');
      expect([type, res.status, text]).toEqual([type, 200, `${header}\n`]);
    }
  });
});

describe('files', () => {
  it('answer as a gzip download whatever Accept-Encoding says, counted once, retryAttempt ignored', async () => {
    for (const accept of ['identity', 'zstd', 'gzip, br']) {
      const { res, body } = await file('trades', DAY_PATH, ASSET, { 'accept-encoding': accept });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/gzip');
      expect(res.headers.get('content-encoding')).toBeNull();
      expect(res.headers.get('content-disposition')).toBe(`attachment; filename="polymarket_trades_2025-12-18_${ASSET}.csv.gz"`);
      expect([body[0], body[1]]).toEqual([0x1f, 0x8b]);
    }
    const key = await app.keyFor('daily');
    const first = await app.get(`/v1/tardis/datasets/polymarket/quotes/${DAY_PATH}/${ASSET}.csv.gz`, { authorization: `Bearer ${key}` });
    const again = await app.get(`/v1/tardis/datasets/polymarket/quotes/${DAY_PATH}/${ASSET}.csv.gz?retryAttempt=1`, { authorization: `Bearer ${key}` });
    expect(Number(first.headers.get('x-ratelimit-remaining')) - Number(again.headers.get('x-ratelimit-remaining'))).toBe(1);
    expect(gunzipSync(Buffer.from(await again.arrayBuffer()))).toEqual(gunzipSync(Buffer.from(await first.arrayBuffer())));
  });

  it('trades: every last_trade_price of the day, tx hash as id, taker side, receive time', async () => {
    const rows = (arrived.get(ASSET) ?? [])
      .filter((a) => a.e.event_type === 'last_trade_price' && a.t >= MIDNIGHT && a.t < MIDNIGHT + 86_400_000)
      .map(
        (a) =>
          `polymarket,${ASSET},${a.t * 1000},${a.local},${a.e.transaction_hash ?? ''},` +
          `${String(a.e.side).toLowerCase()},${Number(a.e.price)},${Number(a.e.size)}`,
      );
    expect(rows.length).toBeGreaterThan(5);
    expect(rows.some((r) => r.includes(HASH))).toBe(true);
    const { text } = await file('trades');
    expect(text).toBe(`exchange,symbol,timestamp,local_timestamp,id,side,price,amount\n${rows.join('\n')}\n`);
  });

  it('incremental_book_L2: a best-first snapshot at 00:00 closed by sentinels, then updates that rebuild the book after every event', async () => {
    const { text } = await file('incremental_book_L2');
    const lines = text.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.shift()).toBe('exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount');
    // The opening snapshot: the model's book at 00:00, asks ascending, then bids descending, each side closed.
    const open = model.bookAt(ASSET, MIDNIGHT - 1)!;
    const at = `polymarket,${ASSET},${MIDNIGHT * 1000},${MIDNIGHT * 1000},true`;
    const snapshot = [
      ...open.asks.map((l) => `${at},ask,${l.price},${l.size}`),
      `${at},ask,1,0`,
      ...open.bids.map((l) => `${at},bid,${l.price},${l.size}`),
      `${at},bid,0,0`,
    ];
    expect(lines.slice(0, snapshot.length)).toEqual(snapshot);
    // Tardis's documented rebuild, checked against the model after each exchange millisecond.
    const bids = new Map<number, number>();
    const asks = new Map<number, number>();
    let lastSnapshot = false;
    let checked = 0;
    const compare = (us: number) => {
      const want = model.bookAt(ASSET, us / 1000) as ModelBook;
      const side = (m: Map<number, number>, desc: boolean) =>
        [...m].map(([price, size]) => ({ price, size })).sort((a, b) => (desc ? b.price - a.price : a.price - b.price));
      expect([us, side(bids, true), side(asks, false)]).toEqual([us, want.bids, want.asks]);
      checked++;
    };
    const localOf = new Map((arrived.get(ASSET) ?? []).map((a) => [a.t, a.local]));
    for (const [i, line] of lines.entries()) {
      const [exchange, symbol, ts, local, isSnapshot, side, price, amount] = line.split(',');
      expect([exchange, symbol]).toEqual(['polymarket', ASSET]);
      if (isSnapshot === 'true' && !lastSnapshot) {
        bids.clear();
        asks.clear();
      }
      lastSnapshot = isSnapshot === 'true';
      const m = side === 'bid' ? bids : asks;
      if (Number(amount) === 0) m.delete(Number(price));
      else m.set(Number(price), Number(amount));
      // Updates carry a receive time of their own millisecond's events.
      if (isSnapshot === 'false' && Number(ts) !== MIDNIGHT * 1000) expect(Number(local) - Number(ts)).toBeGreaterThanOrEqual(100);
      if (isSnapshot === 'false' && localOf.has(Number(ts) / 1000)) expect(Number(local)).toBeGreaterThan(Number(ts));
      const next = lines[i + 1]?.split(',');
      if (!next || next[2] !== ts) compare(Number(ts));
    }
    expect(checked).toBeGreaterThan(50);
  });

  for (const [type, depth] of [
    ['book_snapshot_5', 5],
    ['book_snapshot_25', 25],
    ['quotes', 1],
  ] as const) {
    it(`${type}: a row at 00:00, then one whenever the shown top changed after a millisecond's events`, async () => {
      const cells = (book: ModelBook | null) => {
        const level = (l?: { price: number; size: number }) => (l ? `${l.price},${l.size}` : ',');
        if (type === 'quotes') return `${book?.asks[0]?.size ?? ''},${book?.asks[0]?.price ?? ''},${book?.bids[0]?.price ?? ''},${book?.bids[0]?.size ?? ''}`;
        return Array.from({ length: depth }, (_, i) => `${level(book?.asks[i])},${level(book?.bids[i])}`).join(',');
      };
      const events = (arrived.get(ASSET) ?? []).filter((a) => (a.e.event_type === 'book' || a.e.event_type === 'item') && a.t >= MIDNIGHT);
      const lastLocal = new Map(events.map((a) => [a.t, a.local]));
      const rows = [`polymarket,${ASSET},${MIDNIGHT * 1000},${MIDNIGHT * 1000},${cells(model.bookAt(ASSET, MIDNIGHT - 1))}`];
      let shown = cells(model.bookAt(ASSET, MIDNIGHT - 1));
      for (const t of [...lastLocal.keys()]) {
        const now = cells(model.bookAt(ASSET, t));
        if (now !== shown) rows.push(`polymarket,${ASSET},${t * 1000},${lastLocal.get(t)},${now}`);
        shown = now;
      }
      expect(rows.length).toBeGreaterThan(20);
      const { text } = await file(type);
      expect(text.split('\n').slice(1)).toEqual([...rows, '']);
    });
  }

  it('a day without events: the book as it began, then a no-op update (hftbacktest applies a snapshot at the next update)', async () => {
    const { text } = await file('incremental_book_L2', '2025/12/19');
    const book = model.bookAt(ASSET, MIDNIGHT + 86_400_000)!;
    const at = `polymarket,${ASSET},${(MIDNIGHT + 86_400_000) * 1000},${(MIDNIGHT + 86_400_000) * 1000}`;
    expect(text.split('\n').slice(1)).toEqual([
      ...book.asks.map((l) => `${at},true,ask,${l.price},${l.size}`),
      `${at},true,ask,1,0`,
      ...book.bids.map((l) => `${at},true,bid,${l.price},${l.size}`),
      `${at},true,bid,0,0`,
      `${at},false,bid,0,0`,
      '',
    ]);
  });

  it('the first day of an asset starts at its first book', async () => {
    const { text } = await file('incremental_book_L2', '2025/12/17');
    const first = (arrived.get(ASSET) ?? [])[0];
    expect(text.split('\n')[1]).toMatch(new RegExp(`^polymarket,${ASSET},${first.t * 1000},${first.local},true,ask,`));
  });
});

describe('errors', () => {
  it('never 404 for no data; 400 for an unfinished day, a bad date or type; 401 without a key; 403 before the plan window', async () => {
    expect((await file('trades', DAY_PATH, '424242')).text).toBe('exchange,symbol,timestamp,local_timestamp,id,side,price,amount\n');
    const today = new Date(MIDNIGHT + 3 * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '/');
    const unfinished = await file('trades', today);
    expect([unfinished.res.status, JSON.parse(unfinished.text).detail.param]).toEqual([400, 'day']);
    expect(unfinished.text).not.toContain('ISO 8601 format');
    const bad = await file('trades', '2025/02/30');
    expect([bad.res.status, JSON.parse(bad.text).detail.param]).toEqual([400, 'day']);
    const type = await file('book_snapshot_10');
    expect([type.res.status, JSON.parse(type.text).detail.param]).toEqual([400, 'data_type']);
    const exchange = await app.get(`/v1/tardis/datasets/binance/trades/${DAY_PATH}/${ASSET}.csv.gz`);
    expect(exchange.status).toBe(400);
    const none = await app.app.request(`/v1/tardis/datasets/polymarket/trades/${DAY_PATH}/${ASSET}.csv.gz`, { headers: { authorization: '' } });
    expect([none.status, ((await none.json()) as { detail: { error: string } }).detail.error]).toEqual([401, 'invalid_api_key']);
    const free = await app.keyFor('free');
    const early = await app.app.request(`/v1/tardis/datasets/polymarket/trades/${DAY_PATH}/${ASSET}.csv.gz`, { headers: { authorization: `Bearer ${free}` } });
    expect(early.status).toBe(403);
  });

  it('a free key asking for today’s file: the 400 says the free plan downloads no file, and what it can do instead (issue 35)', async () => {
    const free = await app.keyFor('free');
    const today = new Date(MIDNIGHT + 3 * 86_400_000).toISOString().slice(0, 10);
    const res = await app.app.request(`/v1/tardis/datasets/polymarket/trades/${today.replaceAll('-', '/')}/${ASSET}.csv.gz`, {
      headers: { authorization: `Bearer ${free}` },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      detail: {
        error: 'invalid_parameter',
        param: 'day',
        message:
          `${today} is not complete yet: a day's file is served once the day ended a minute ago. Your plan (free) reads today only, so it ` +
          'downloads no day files: replay today’s finished minutes with /v1/tardis/data-feeds, or export them with /v1/ticks/export; a paid plan ' +
          'downloads every finished day of its window.',
      },
    });
    // A paid plan is told only when the day’s file comes.
    const unfinished = await file('trades', today.replaceAll('-', '/'));
    expect(JSON.parse(unfinished.text).detail.message).toBe(`${today} is not complete yet: a day's file is served once the day ended a minute ago`);
  });
});
