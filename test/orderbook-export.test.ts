import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookRows, moreRowsThan } from '../src/book-history/dataset-rows.js';
import { replayLines } from '../src/ingest/frame-files.js';
import { type FrameStream, generateFrames } from './support/book-frames.js';
import { BookModel, type ModelBook } from './support/book-model.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { TEST_BACKEND } from './support/engine.js';
import { firstBytesThenDisconnect, runningQueries } from './support/export-disconnect.js';
import { zstdFrames } from './support/zstd-frames.js';

/**
 * GET /v1/orderbook/export (docs/TIME-MACHINE.md §3) against the reference model and against
 * /v1/orderbook itself: every row of every format, with and without `interval`.
 */
let ob: DataApp;
let stream: FrameStream;
const model = new BookModel();
let dir: string;
let server: ServerType;
let port: number;
const BIG = '777000';
const BIG_ROWS = 2_000_000;

/**
 * The generated stream, plus the exchange re-sending the current book (unchanged) right after some
 * changes, in the same millisecond: a snapshot that changes nothing must still make its own row
 * only when its millisecond has no other event, and never a different book.
 */
function withResentBooks(lines: string[]): string[] {
  const seen = new BookModel();
  const out: string[] = [];
  lines.forEach((line, i) => {
    seen.push(line);
    out.push(line);
    const frame = line.startsWith('{') ? JSON.parse(line) : null;
    if (i % 7 !== 0 || frame?.event_type !== 'price_change') return;
    const asset = String(frame.asset_id ?? frame.price_changes[0].asset_id);
    const t = Number(frame.timestamp);
    const book = seen.bookAt(asset, t)!;
    const text = (levels: { price: number; size: number }[]) => levels.map((l) => ({ price: String(l.price), size: String(l.size) }));
    const resent = JSON.stringify({
      event_type: 'book',
      asset_id: asset,
      market: book.market,
      timestamp: String(t),
      hash: 'h',
      bids: text(book.bids),
      asks: text(book.asks),
    });
    seen.push(resent);
    out.push(resent);
  });
  return out;
}

beforeAll(async () => {
  stream = generateFrames(20261124, 2500);
  stream.lines = withResentBooks(stream.lines);
  for (const line of stream.lines) model.push(line);
  ob = await startDataApp(stream.end + 86_400_000);
  const summary = await replayLines(ob.te.engine, stream.lines, { sourceId: 'orderbook-export', checkpoints: { changes: 25, ms: 60_000 } });
  expect(summary.normalizer.malformed).toBe(0);
  // A large book for the streaming tests, generated inside the engine: one snapshot, then changes.
  await ob.te.engine.command(
    `INSERT INTO book_events (asset_id, t, seq, kind, market, price, size, book_side, bids, asks)
     SELECT '${BIG}', fromUnixTimestamp64Milli(toInt64(${stream.start} + number), 'UTC'), number, if(number = 0, 'book', 'price_change'), '0xbig',
            (number % 40 + 1) / 100, if(number % 9 = 0, 0, number % 500 + 1), if(number % 2 = 0, 'BUY', 'SELL'),
            if(number = 0, [(0.4, 10.0)], []), if(number = 0, [(0.6, 10.0)], [])
     FROM numbers(${BIG_ROWS})`,
  );
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-book-export-'));
  server = serve({ fetch: ob.app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((r) => server.once('listening', r));
  port = (server.address() as { port: number }).port;
}, 300_000);

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await ob?.close();
  rmSync(dir, { recursive: true, force: true });
});

const url = (params: Record<string, string | number | undefined>) =>
  `/v1/orderbook/export?${new URLSearchParams(
    Object.entries(params)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, String(v)]),
  )}`;

const get = (path: string, headers: Record<string, string> = {}) => ob.get(path, headers);

/** Expected rows from the model: one per distinct event time in [start, end], or per grid point with a book. */
function expectedRows(asset: string, start: number, end: number, interval?: number): { time: number; book: ModelBook }[] {
  const times: number[] = [];
  if (interval === undefined) {
    for (const t of new Set(model.times(asset))) if (t >= start && t <= end) times.push(t);
  } else {
    // Every multiple of interval in [start, end] (docs/TIME-MACHINE.md §3), not start + k·interval.
    for (let p = Math.ceil(start / interval) * interval; p <= end; p += interval) times.push(p);
  }
  return times.flatMap((time) => {
    const book = model.bookAt(asset, time);
    return book ? [{ time, book }] : [];
  });
}

const header = (depth: number) => {
  const cols = ['timestamp', 'best_bid', 'best_ask'];
  for (const side of ['bid', 'ask']) for (let i = 0; i < depth; i++) cols.push(`${side}_price_${i}`, `${side}_size_${i}`);
  return cols;
};
const csvRow = ({ time, book }: { time: number; book: ModelBook }, depth: number) => {
  const cells: (number | string)[] = [time, book.best_bid, book.best_ask];
  for (const levels of [book.bids, book.asks]) for (let i = 0; i < depth; i++) cells.push(levels[i]?.price ?? '', levels[i]?.size ?? '');
  return cells.join(',');
};
const jsonlRow = ({ time, book }: { time: number; book: ModelBook }, depth: number) =>
  JSON.stringify({
    timestamp: time,
    best_bid: book.best_bid,
    best_ask: book.best_ask,
    bids: book.bids.slice(0, depth).map((l) => [l.price, l.size]),
    asks: book.asks.slice(0, depth).map((l) => [l.price, l.size]),
  });

const cases = [
  { name: 'every change', interval: undefined, depth: 5 },
  { name: 'grid of 997 ms', interval: 997, depth: 30 },
];

describe('GET /v1/orderbook/export against the model', () => {
  for (const { name, interval, depth } of cases) {
    it(`CSV, JSONL and Parquet (${name}, depth ${depth}) hold exactly the model's rows`, async () => {
      for (const asset of stream.assets) {
        const times = model.times(asset);
        // From inside the history (the state before start counts) to before the end, and from before the first book.
        for (const [start, end] of [
          [times[Math.floor(times.length / 3)] + 1, times[times.length - 5]],
          [stream.start - 5000, stream.end],
        ]) {
          const rows = expectedRows(asset, start, end, interval);
          expect(rows.length, asset).toBeGreaterThan(20);
          const csv = await get(url({ asset_id: asset, start, end, depth, interval }));
          expect(csv.status).toBe(200);
          expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
          expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="orderbook_${asset}_${start}_${end}.csv"`);
          expect(await csv.text(), `${asset} csv`).toBe(`${[header(depth).join(','), ...rows.map((r) => csvRow(r, depth))].join('\n')}\n`);

          const jsonl = await get(url({ asset_id: asset, start, end, depth, interval, format: 'jsonl' }));
          expect(jsonl.headers.get('content-type')).toBe('application/x-ndjson');
          expect(await jsonl.text(), `${asset} jsonl`).toBe(rows.map((r) => `${jsonlRow(r, depth)}\n`).join(''));

          const parquet = await get(url({ asset_id: asset, start, end, depth, interval, format: 'parquet' }));
          expect(parquet.headers.get('content-type')).toBe('application/vnd.apache.parquet');
          expect(parquet.headers.get('content-disposition')).toBe(`attachment; filename="orderbook_${asset}_${start}_${end}.parquet"`);
          const file = join(dir, `${asset}-${start}.parquet`);
          writeFileSync(file, Buffer.from(await parquet.arrayBuffer()));
          const back = await ob.te.engine.rows(`SELECT * FROM file('${file}', 'Parquet') SETTINGS output_format_json_quote_64bit_integers = 0`);
          const columns = header(depth);
          expect(back, `${asset} parquet`).toEqual(
            rows.map((r) =>
              Object.fromEntries(
                csvRow(r, depth)
                  .split(',')
                  .map((cell, i) => [columns[i], cell === '' ? null : Number(cell)]),
              ),
            ),
          );
        }
      }
    }, 300_000);
  }

  it('Parquet column types: timestamp Int64, every other column nullable Float64', async () => {
    const res = await get(url({ asset_id: stream.assets[0], start: stream.start, end: stream.end, depth: 2, format: 'parquet' }));
    const file = join(dir, 'types.parquet');
    writeFileSync(file, Buffer.from(await res.arrayBuffer()));
    const types = await ob.te.engine.rows<{ name: string; type: string }>(`DESCRIBE file('${file}', 'Parquet')`);
    expect(types.map((c) => [c.name, c.type])).toEqual(header(2).map((name, i) => [name, i === 0 ? 'Int64' : 'Nullable(Float64)']));
  });

  // Through the server backend a lookup has no book cache: a few engine round trips to the loopback
  // test server each (~30 ms; 118 s for every row against 1.8 s embedded). There every 10th row and the
  // last are looked up, the same code per row; on the embedded engine every row.
  const LOOKUP_STRIDE = TEST_BACKEND === 'http' ? 10 : 1;
  it('every row equals /v1/orderbook?timestamp=<row time>&limit=<depth>', async () => {
    for (const asset of stream.assets) {
      for (const interval of [undefined, 1499]) {
        const res = await get(url({ asset_id: asset, start: stream.start, end: stream.end, depth: 7, interval, format: 'jsonl' }));
        const rows = (await res.text())
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l));
        expect(rows.length).toBeGreaterThan(50);
        const checked = rows.filter((_, i) => i % LOOKUP_STRIDE === 0 || i === rows.length - 1);
        for (let i = 0; i < checked.length; i += 8) {
          await Promise.all(
            checked.slice(i, i + 8).map(async (row) => {
              const book = await get(`/v1/orderbook?asset_id=${asset}&timestamp=${row.timestamp}&limit=7`);
              const { best_bid, best_ask, bids, asks } = (await book.json()).data;
              expect(row, `${asset}@${row.timestamp}`).toEqual({
                timestamp: row.timestamp,
                best_bid,
                best_ask,
                bids: bids.map((l: { price: number; size: number }) => [l.price, l.size]),
                asks: asks.map((l: { price: number; size: number }) => [l.price, l.size]),
              });
            }),
          );
        }
      }
    }
  }, 300_000);

  it('numbers off the 0.001 grid, of every length, at depth 100: each one as String() writes it', async () => {
    // Prices from arithmetic, sizes with many decimals, the exponent forms and the longest text a
    // double has: the export writes thousandths from tables and everything else through String().
    const ODD = '770077';
    const t0 = stream.end + 10_000;
    const bids = Array.from({ length: 120 }, (_, i) => ({ price: 0.99 - i * 0.0081 + 1e-17 * i, size: 1234.5678901 + i / 7 }));
    const asks = Array.from({ length: 120 }, (_, i) => ({
      price: 1 + i * 0.0103,
      size: i % 3 === 0 ? 1e21 * (i + 1) : i % 3 === 1 ? -1.2345678901234567e-6 : 5e-7 * (i + 1),
    }));
    const changes: [number, 'BUY' | 'SELL', number, number][] = [
      [1, 'BUY', 0.47000000000000003, 100.125],
      [2, 'SELL', 0.30000000000000004, 0.1 + 0.2],
      [2, 'BUY', bids[0].price, 0],
      [3, 'SELL', 1e-7, 987654321012.5],
    ];
    const tuple = (l: { price: number; size: number }) => `(${l.price}, ${l.size})`;
    await ob.te.engine.command(
      `INSERT INTO book_events (asset_id, t, seq, kind, market, price, size, book_side, bids, asks) VALUES
       ('${ODD}', fromUnixTimestamp64Milli(${t0}, 'UTC'), 0, 'book', '0xodd', 0, 0, '', [${bids.map(tuple).join(', ')}], [${asks.map(tuple).join(', ')}]),
       ${changes
         .map(
           ([dt, side, price, size], i) =>
             `('${ODD}', fromUnixTimestamp64Milli(${t0 + dt}, 'UTC'), ${i + 1}, 'price_change', '0xodd', ${price},` + ` ${size}, '${side}', [], [])`,
         )
         .join(',\n')}`,
    );
    // The reference: the book after each millisecond, levels sorted best first, numbers by String().
    const book = { bids: new Map(bids.map((l) => [l.price, l.size])), asks: new Map(asks.map((l) => [l.price, l.size])) };
    const expected: { time: number; book: ModelBook }[] = [];
    const snapshot = (time: number) => {
      const sorted = (m: Map<number, number>, desc: boolean) =>
        [...m]
          .filter(([, size]) => size > 0)
          .sort((a, b) => (desc ? b[0] - a[0] : a[0] - b[0]))
          .map(([price, size]) => ({ price, size }));
      const b = sorted(book.bids, true);
      const a = sorted(book.asks, false);
      expected.push({ time, book: { bids: b, asks: a, best_bid: b[0]?.price ?? 0, best_ask: a[0]?.price ?? 1 } as ModelBook });
    };
    snapshot(t0);
    for (const dt of [1, 2, 3]) {
      for (const [at, side, price, size] of changes) if (at === dt) (side === 'BUY' ? book.bids : book.asks).set(price, size);
      snapshot(t0 + dt);
    }
    const q = { asset_id: ODD, start: t0, end: t0 + 3, depth: 100 };
    expect(await (await get(url(q))).text()).toBe(`${[header(100).join(','), ...expected.map((r) => csvRow(r, 100))].join('\n')}\n`);
    expect(await (await get(url({ ...q, format: 'jsonl' }))).text()).toBe(expected.map((r) => `${jsonlRow(r, 100)}\n`).join(''));
  });

  it('an asset without a book: CSV is the header alone, JSONL empty, Parquet a valid file with no rows', async () => {
    const q = { asset_id: stream.tradeOnlyAsset, start: stream.start, end: stream.end, depth: 1 };
    expect(await (await get(url(q))).text()).toBe('timestamp,best_bid,best_ask,bid_price_0,bid_size_0,ask_price_0,ask_size_0\n');
    expect(await (await get(url({ ...q, format: 'jsonl' }))).text()).toBe('');
    const file = join(dir, 'empty.parquet');
    writeFileSync(file, Buffer.from(await (await get(url({ ...q, format: 'parquet' }))).arrayBuffer()));
    expect(await ob.te.engine.rows(`SELECT count() AS n FROM file('${file}', 'Parquet') SETTINGS output_format_json_quote_64bit_integers = 0`)).toEqual([
      { n: 0 },
    ]);
  });

  it('depth defaults to 25; gzip decodes to the same bytes', async () => {
    const q = { asset_id: stream.assets[1], start: stream.start, end: stream.end };
    const plain = await (await get(url(q))).text();
    expect(plain.slice(0, plain.indexOf('\n')).split(',')).toEqual(header(25));
    const res = await get(url(q), { 'accept-encoding': 'gzip' });
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(res.headers.get('vary')).toBe('Accept-Encoding');
    expect(zlib.gunzipSync(Buffer.from(await res.arrayBuffer())).toString()).toBe(plain);
  });

  it('400 per parameter with the allowed values, 403 before the window, counted with X-RateLimit-*', async () => {
    const ok = { asset_id: stream.assets[0], start: stream.start, end: stream.end };
    const bad: [Record<string, string | number | undefined>, string, string][] = [
      [{ ...ok, depth: 0 }, 'depth', 'depth must be an integer between 1 and 100'],
      [{ ...ok, depth: 101 }, 'depth', 'depth must be an integer between 1 and 100'],
      [{ ...ok, depth: 'x' }, 'depth', 'depth must be an integer between 1 and 100'],
      [{ ...ok, interval: 0 }, 'interval', 'interval must be an integer between 1 and 8640000000000000'],
      [{ ...ok, interval: '1.5' }, 'interval', 'interval must be an integer between 1 and 8640000000000000'],
      [{ ...ok, format: 'xlsx' }, 'format', 'format must be one of csv, jsonl, parquet'],
      [{ ...ok, asset_id: 'abc' }, 'asset_id', 'asset_id must be 1-100 decimal digits'],
      [{ ...ok, start: undefined }, 'start', 'start is required; it must be an integer of Unix milliseconds (UTC), 0 or more'],
      [{ ...ok, end: -1 }, 'end', 'end must be an integer of Unix milliseconds (UTC), 0 or more'],
      [{ ...ok, start: stream.end, end: stream.start }, 'start', 'start must be less than or equal to end'],
    ];
    for (const [params, param, message] of bad) {
      const res = await get(url(params));
      expect(res.status, param).toBe(400);
      expect(await res.json()).toEqual({ detail: { error: 'invalid_parameter', param, message } });
      expect(res.headers.get('x-ratelimit-limit')).toBe('500000');
    }
    const key = await ob.keyFor('free');
    const res = await ob.app.request(url(ok), { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(403);
    expect((await res.json()).detail).toMatchObject({
      error: 'data_access_denied',
      plan: 'free',
      message: 'Your plan (free) only allows access to the last 0 day(s) of data.',
    });
    expect(res.headers.get('x-ratelimit-remaining')).toBe('99');
    expect((await ob.app.request(url(ok))).status).toBe(401);
  });
});

/** Engine queries still reading the big asset's events. */
const runningExports = () => runningQueries(ob.te.engine, ['%FROM book_events%', '%ORDER BY t ASC, seq ASC%']);

describe('streaming over a real socket', () => {
  it('the Node response path sends the same bytes: plain, gzip and zstd, with every header', async () => {
    const path = url({ asset_id: stream.assets[2], start: stream.start, end: stream.end, depth: 3 });
    const expected = await (await get(path)).text();
    const { Decoder } = createRequire(import.meta.url)('@toondepauw/node-zstd') as { Decoder: new () => { decodeSync(b: Buffer): Buffer } };
    const decode: Record<string, (b: Buffer) => Buffer> = { identity: (b) => b, gzip: zlib.gunzipSync, zstd: (b) => new Decoder().decodeSync(b) };
    for (const encoding of ['identity', 'gzip', 'zstd']) {
      const res = await new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
        httpRequest({ host: '127.0.0.1', port, path, headers: { authorization: `Bearer ${ob.key}`, 'accept-encoding': encoding } }, (r) => {
          const parts: Buffer[] = [];
          r.on('data', (b: Buffer) => parts.push(b));
          r.on('end', () => resolve({ headers: r.headers, body: Buffer.concat(parts) }));
        })
          .on('error', reject)
          .end();
      });
      expect(decode[encoding](res.body).toString(), encoding).toBe(expected);
      expect(res.headers['content-encoding']).toBe(encoding === 'identity' ? undefined : encoding);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(res.headers['content-disposition']).toBe(`attachment; filename="orderbook_${stream.assets[2]}_${stream.start}_${stream.end}.csv"`);
      expect(res.headers['x-ratelimit-limit']).toBe('500000');
      expect(res.headers['x-request-id']).toBeTruthy();
    }
  });

  // Node 20's zlib has no zstd: there each chunk is a frame of its own (src/http/stream.ts), which the
  // test above decodes; the CI pass under Node 24 runs this one.
  it.runIf(typeof zlib.createZstdCompress === 'function')(
    'zstd is one frame, flushed in blocks as the chunks go: a decoder that reads one frame reads it whole',
    async () => {
      const path = url({ asset_id: BIG, start: stream.start, end: stream.start + 100_000, depth: 10 });
      const expected = await (await get(path)).text();
      const res = await new Promise<{ encoding: unknown; body: Buffer }>((resolve, reject) => {
        httpRequest({ host: '127.0.0.1', port, path, headers: { authorization: `Bearer ${ob.key}`, 'accept-encoding': 'zstd' } }, (r) => {
          const parts: Buffer[] = [];
          r.on('data', (b: Buffer) => parts.push(b));
          r.on('end', () => resolve({ encoding: r.headers['content-encoding'], body: Buffer.concat(parts) }));
        })
          .on('error', reject)
          .end();
      });
      expect(res.encoding).toBe('zstd');
      const { frames, blocks } = zstdFrames(res.body);
      expect(frames).toBe(1);
      expect(blocks).toBeGreaterThan(1);
      expect(zlib.zstdDecompressSync(res.body).toString()).toBe(expected);
    },
  );

  const bigUrl = (format: string) => url({ asset_id: BIG, start: stream.start, end: stream.start + BIG_ROWS, depth: 10, format });

  it('sends the first bytes before the read finishes, and a disconnect cancels the engine query (it leaves the process list)', async () => {
    const received = await firstBytesThenDisconnect(port, bigUrl('csv'), ob.key, runningExports);
    // 2 M rows of ~150 bytes were never all produced.
    expect(received).toBeLessThan(200_000_000);
  });

  it('the fold hands over a bounded number of rows per turn, however many one read chunk or one quiet stretch holds', async () => {
    // Every row of a turn is held (as text or Parquet values) until the turn ends: turns must stay
    // small both for a dense stretch (2 M changes, one per ms) and a grid over a quiet one.
    const last = stream.start + BIG_ROWS - 1;
    for (const q of [
      { assetId: BIG, start: stream.start, end: last },
      { assetId: BIG, start: last + 1, end: last + 10_000_000, interval: 1 },
    ]) {
      let rows = 0;
      const turns = bookRows(ob.te.engine, q, () => void rows++);
      // Three turns with rows (the grid's first turns only fold the 2 M changes before its start).
      const counts: number[] = [];
      while (counts.length < 3) {
        expect((await turns.next()).done).toBe(false);
        if (rows > 0) counts.push(rows);
        rows = 0;
      }
      await turns.return(undefined);
      expect(Math.max(...counts), JSON.stringify(q)).toBeLessThanOrEqual(4096);
    }
  });

  it('a visitor that asks for a turn (a full chunk or row group) gets it before the next row; no row is lost or made twice', async () => {
    const span = { assetId: BIG, start: stream.start + 1_000, end: stream.start + 40_000 };
    for (const q of [span, { ...span, interval: 3 }]) {
      const plain: number[] = [];
      for await (const _turn of bookRows(ob.te.engine, q, (time) => void plain.push(time)));
      const paced: number[] = [];
      let sinceTurn = 0;
      let most = 0;
      for await (const _turn of bookRows(ob.te.engine, q, (time) => {
        paced.push(time);
        most = Math.max(most, ++sinceTurn);
        return paced.length % 7 === 0;
      }))
        sinceTurn = 0;
      expect(plain.length, JSON.stringify(q)).toBeGreaterThan(1_000);
      expect(paced).toEqual(plain);
      expect(most, JSON.stringify(q)).toBe(7);
    }
  });

  it('a Parquet book export is bounded in rows: counted for a grid, read (up to the bound) for book changes (issue 35)', async () => {
    const engine = ob.te.engine;
    const last = stream.start + BIG_ROWS - 1;
    // One change per ms: 1,000 ms hold 1,000 rows. A range within the bound is never read.
    const thousand = { assetId: BIG, start: stream.start + 5_000, end: stream.start + 5_999 };
    expect([await moreRowsThan(engine, thousand, 1_000), await moreRowsThan(engine, thousand, 999)]).toEqual([false, true]);
    // 10,500 ms of which the asset has events in 500: counted by the engine, not by the range's length.
    const tail = { assetId: BIG, start: last - 499, end: last + 10_000 };
    expect([await moreRowsThan(engine, tail, 500), await moreRowsThan(engine, tail, 499)]).toEqual([false, true]);
    // A grid: its points from the first multiple of interval on (3 ms over 3,000 ms: 1,000 or 1,001 points).
    const grid = { assetId: BIG, start: 3_000_000, end: 3_002_999, interval: 3 };
    expect([await moreRowsThan(engine, grid, 1_000), await moreRowsThan(engine, grid, 999)]).toEqual([false, true]);
    // Through the route: depth 100 holds 211,250 rows in Parquet; the 2 M changes are refused before any byte.
    const res = await get(url({ asset_id: BIG, start: stream.start, end: last, depth: 100, format: 'parquet' }));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      detail: {
        error: 'invalid_parameter',
        param: 'format',
        message:
          'a Parquet book export holds at most 211250 rows at depth 100 (its footer lists every row group, and must stay readable): narrow ' +
          'start..end, raise interval or lower depth, or ask for csv or jsonl, which have no such bound',
      },
    });
  });

  it('a failure after the first byte aborts the transfer', async () => {
    const res = await fetch(`http://127.0.0.1:${port}${bigUrl('jsonl')}`, { headers: { authorization: `Bearer ${ob.key}` } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    await ob.te.engine.command(`KILL QUERY WHERE query LIKE '%FROM book_events%' AND query LIKE '%ORDER BY t ASC, seq ASC%' AND query NOT LIKE '%KILL%' ASYNC`);
    let failed = false;
    try {
      for (;;) if ((await reader.read()).done) break;
    } catch {
      failed = true;
    }
    expect(failed).toBe(true);
  });
});
