import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/clickhouse/engine.js';
import { exportCuts, streamTicksExport } from '../src/queries/ticks-export.js';
import { firstBytesThenDisconnect, runningQueries } from './support/export-disconnect.js';
import { type ExpectedTick, generateStream, json, replayStream, startTicksApp, type TicksApp } from './support/ticks-fixture.js';

const A = '424242';
const BIG = '999000';
const START = Date.UTC(2026, 5, 2);
const NOW = Date.UTC(2026, 5, 20, 12);
const BIG_ROWS = 3_000_000;

let t: TicksApp;
let ticksOfA: ExpectedTick[];
let server: ServerType;
let port: number;
let dir: string;

const zstdInstalled = (() => {
  try {
    createRequire(import.meta.url)('@toondepauw/node-zstd');
    return true;
  } catch {
    return false;
  }
})();

beforeAll(async () => {
  t = await startTicksApp(NOW);
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-export-'));
  const stream = generateStream({
    // A label with a comma and quotes: the one CSV field that needs quoting.
    assets: [{ asset_id: A, market: '0xe1', outcome: 'Yes, "surely"', question: 'Quoted?' }],
    start: START,
    events: 30_000,
    meanGapMs: 20,
    seed: 3,
  });
  await replayStream(t.deps, stream, 'export');
  ticksOfA = stream.ticks;
  // A large asset for the disconnect test, generated inside the engine.
  await t.deps.engine.command(
    `INSERT INTO ticks (asset_id, t, seq, event, side, best_bid, best_ask, price, size, market) SELECT '${BIG}',` +
      ` fromUnixTimestamp64Milli(toInt64(${START} + intDiv(number, 3)), 'UTC'), number, 'price_change', 'YES',
       0.4 + (number % 17) / 100, 0.6, 0.5, number % 1000, '0xbig' FROM numbers(${BIG_ROWS})`,
  );
  server = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((r) => server.once('listening', r));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

const num = (n: number) => String(n);
const csvField = (s: string) => (/[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s);
const expectedCsv = (ticks: ExpectedTick[]) =>
  'timestamp,event_type,side,best_bid,best_ask,price,size\n' +
  ticks.map((k) => `${[k.t, k.event, csvField(k.side), num(k.best_bid), num(k.best_ask), num(k.price), num(k.size)].join(',')}\n`).join('');
const expectedJsonl = (ticks: ExpectedTick[]) =>
  ticks
    .map((k) => `${JSON.stringify({ t: k.t, event: k.event, side: k.side, best_bid: k.best_bid, best_ask: k.best_ask, price: k.price, size: k.size })}\n`)
    .join('');

const exportUrl = (params: Record<string, string | number>) =>
  `/v1/ticks/export?${new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]))}`;

describe('GET /v1/ticks/export', () => {
  it('CSV: exact header, rows, headers', async () => {
    const end = ticksOfA[999].t;
    const res = await t.get(exportUrl({ asset_id: A, start: START, end }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="ticks_${A}_${START}_${end}.csv"`);
    const body = await res.text();
    expect(body).toBe(expectedCsv(ticksOfA.filter((k) => k.t <= end)));
    expect(body).toContain(',"YES, ""SURELY""",');
  });

  it('CSV of every tick (several engine chunks) has one header and every row', async () => {
    const res = await t.get(exportUrl({ asset_id: A, start: START, end: NOW, format: 'csv' }));
    expect(await res.text()).toBe(expectedCsv(ticksOfA));
  });

  it('JSONL: one object per line, members in order, event_type filter', async () => {
    const res = await t.get(exportUrl({ asset_id: A, start: START, end: NOW, format: 'jsonl', event_type: 'book' }));
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="ticks_${A}_${START}_${NOW}.jsonl"`);
    expect(await res.text()).toBe(expectedJsonl(ticksOfA.filter((k) => k.event === 'book')));
    const all = await t.get(exportUrl({ asset_id: A, start: START, end: NOW, format: 'jsonl' }));
    expect(await all.text()).toBe(expectedJsonl(ticksOfA));
  });

  it('an empty range: CSV is the header alone, JSONL is empty', async () => {
    expect(await (await t.get(exportUrl({ asset_id: '1', start: START, end: NOW }))).text()).toBe('timestamp,event_type,side,best_bid,best_ask,price,size\n');
    expect(await (await t.get(exportUrl({ asset_id: '1', start: START, end: NOW, format: 'jsonl' }))).text()).toBe('');
  });

  it('Parquet: the engine reads back the same rows', async () => {
    const res = await t.get(exportUrl({ asset_id: A, start: START, end: NOW, format: 'parquet' }));
    expect(res.headers.get('content-type')).toBe('application/vnd.apache.parquet');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="ticks_${A}_${START}_${NOW}.parquet"`);
    const file = join(dir, 'export.parquet');
    writeFileSync(file, Buffer.from(await res.arrayBuffer()));
    const rows = await t.deps.engine.rows(`SELECT * FROM file('${file}', 'Parquet') SETTINGS output_format_json_quote_64bit_integers = 0`);
    expect(rows.map((r) => ({ ...r, t: Number(r.t) }))).toEqual(ticksOfA.map(({ asset_id: _a, ...k }) => k));
  });

  it('gzip: decodes to the same bytes', async () => {
    const plain = await (await t.get(exportUrl({ asset_id: A, start: START, end: NOW, format: 'jsonl' }))).text();
    const res = await t.get(exportUrl({ asset_id: A, start: START, end: NOW, format: 'jsonl' }), { 'accept-encoding': 'gzip' });
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(res.headers.get('vary')).toBe('Accept-Encoding');
    expect(gunzipSync(Buffer.from(await res.arrayBuffer())).toString()).toBe(plain);
  });

  it.skipIf(!zstdInstalled)('zstd: decodes to the same bytes', async () => {
    const { Decoder } = createRequire(import.meta.url)('@toondepauw/node-zstd') as { Decoder: new () => { decodeSync(b: Buffer): Buffer } };
    const plain = await (await t.get(exportUrl({ asset_id: A, start: START, end: NOW }))).text();
    const res = await t.get(exportUrl({ asset_id: A, start: START, end: NOW }), { 'accept-encoding': 'gzip, deflate, br, zstd' });
    expect(res.headers.get('content-encoding')).toBe('zstd');
    expect(new Decoder().decodeSync(Buffer.from(await res.arrayBuffer())).toString()).toBe(plain);
  });

  it('ignores an encoding it cannot produce', async () => {
    const res = await t.get(exportUrl({ asset_id: A, start: START, end: ticksOfA[10].t }), { 'accept-encoding': 'br, gzip;q=0' });
    expect(res.headers.get('content-encoding')).toBeNull();
    expect(await res.text()).toBe(expectedCsv(ticksOfA.filter((k) => k.t <= ticksOfA[10].t)));
  });

  it('400s: format, asset_id, start > end, and 403 before the window', async () => {
    const bad = await json(await t.get(exportUrl({ asset_id: A, start: START, end: NOW, format: 'xlsx' })), 400);
    expect(bad.detail).toMatchObject({ error: 'invalid_parameter', param: 'format', message: 'format must be one of csv, jsonl, parquet' });
    expect((await json(await t.get(exportUrl({ asset_id: 'abc', start: START, end: NOW })), 400)).detail.param).toBe('asset_id');
    expect((await json(await t.get(exportUrl({ asset_id: A, start: NOW, end: START })), 400)).detail.param).toBe('start');
    expect((await json(await t.get(exportUrl({ asset_id: A, start: START, end: NOW, event_type: 'x' })), 400)).detail.param).toBe('event_type');
    expect((await json(await t.get(exportUrl({ asset_id: A, end: NOW })), 400)).detail.param).toBe('start');
    const key = await t.keyFor('free');
    const res = await t.app.request(exportUrl({ asset_id: A, start: START, end: NOW }), { headers: { authorization: `Bearer ${key}` } });
    expect((await json(res, 403)).detail.message).toBe('Your plan (free) only allows access to the last 0 day(s) of data.');
  });
});

/**
 * An export reads at most EXPORT_WINDOW_MONTHS months at a time, one read after another; the bytes
 * must be those of one read of the whole range. Ticks over fifteen months, with runs of equal
 * timestamps (arrival order decides) on both sides of every cut, and the expected rows computed
 * here from what was inserted.
 */
describe('an export over many months', () => {
  const W = '515151';
  const ticks: { t: number; seq: number; price: number; size: number }[] = [];
  // Mid-month, so the cuts fall on the first of July 2025 and of January 2026.
  const from = Date.UTC(2025, 0, 17, 5);
  const cuts = exportCuts(from, Date.UTC(2026, 3, 1));

  beforeAll(async () => {
    expect(cuts).toEqual([Date.UTC(2025, 6, 1), Date.UTC(2026, 0, 1)]);
    let seq = 1_000;
    const at = (t: number, n: number) => {
      // Descending seq within a run: the rows must come out in seq order, not in insertion order.
      for (let i = n; i > 0; i--) ticks.push({ t, seq: seq + i, price: ((seq + i) % 997) / 1000, size: (t % 1000) + i });
      seq += n + 1;
    };
    for (let t = from; t < Date.UTC(2026, 3, 1); t += 86_400_000 * 3 + 12_345) at(t, 1 + (t % 3));
    for (const cut of cuts) for (const t of [cut - 1, cut, cut + 1]) at(t, 3);
    const values = ticks.map(
      (k) => `('${W}', fromUnixTimestamp64Milli(${k.t}, 'UTC'), ${k.seq}, 'price_change', 'YES', 0.1, 0.9, ${k.price}, ${k.size}, '0xw')`,
    );
    await t.deps.engine.command(`INSERT INTO ticks (asset_id, t, seq, event, side, best_bid, best_ask, price, size, market) VALUES ${values.join(', ')}`);
    ticks.sort((a, b) => a.t - b.t || a.seq - b.seq);
  });

  const csvRow = (k: (typeof ticks)[number]) => `${k.t},price_change,YES,0.1,0.9,${k.price},${k.size}\n`;

  it('CSV and JSONL hold every tick once, in (t, seq) order, across the cuts', async () => {
    const end = Date.UTC(2026, 5, 1);
    const csv = await (await t.get(exportUrl({ asset_id: W, start: from - 1_000, end }))).text();
    expect(csv).toBe(`timestamp,event_type,side,best_bid,best_ask,price,size\n${ticks.map(csvRow).join('')}`);
    const jsonl = await (await t.get(exportUrl({ asset_id: W, start: from - 1_000, end, format: 'jsonl' }))).text();
    expect(jsonl).toBe(
      ticks
        .map((k) => `${JSON.stringify({ t: k.t, event: 'price_change', side: 'YES', best_bid: 0.1, best_ask: 0.9, price: k.price, size: k.size })}\n`)
        .join(''),
    );
  });

  it('a range starting or ending on a cut, or inside one window, reads exactly its ticks', async () => {
    for (const [start, end] of [
      [cuts[0], cuts[1]],
      [cuts[0] - 1, cuts[1] - 1],
      [cuts[1], cuts[1]],
      [from, cuts[0] - 1],
    ]) {
      const csv = await (await t.get(exportUrl({ asset_id: W, start, end }))).text();
      expect(csv).toBe(
        `timestamp,event_type,side,best_bid,best_ask,price,size\n${ticks
          .filter((k) => k.t >= start && k.t <= end)
          .map(csvRow)
          .join('')}`,
      );
    }
  });

  it('reads window by window, and a range within one window in one read with no span lookup', async () => {
    // The real engine, with its reads recorded: which windows were read, and whether asset_stats was.
    const reads: [number, number][] = [];
    let lookups = 0;
    const engine = t.deps.engine;
    const recording = Object.create(engine, {
      stream: {
        value: (sql: string, format: string, o: { params: { start: number; end: number } }) => (
          reads.push([o.params.start, o.params.end]), engine.stream(sql, format, o)
        ),
      },
      compactRows: { value: (...a: Parameters<Engine['compactRows']>) => (lookups++, engine.compactRows(...a)) },
    }) as Engine;
    const drain = async (start: number, end: number) => {
      for await (const _ of streamTicksExport(recording, { asset_id: W, start, end }, 'csv'));
    };
    const end = Date.UTC(2026, 5, 1);
    await drain(from - 1_000, end);
    expect({ reads, lookups }).toEqual({
      reads: [
        [from - 1_000, cuts[0] - 1],
        [cuts[0], cuts[1] - 1],
        [cuts[1], end],
      ],
      lookups: 1,
    });
    reads.length = lookups = 0;
    await drain(cuts[0], cuts[0] + 86_400_000);
    expect({ reads, lookups }).toEqual({ reads: [[cuts[0], cuts[0] + 86_400_000]], lookups: 0 });
  });
});

describe('exportCuts', () => {
  it('cuts at the first instant of every sixth month counted from the first tick, up to the last', () => {
    expect(exportCuts(Date.UTC(2025, 0, 17), Date.UTC(2025, 6, 1) - 1)).toEqual([]);
    expect(exportCuts(Date.UTC(2025, 0, 17), Date.UTC(2025, 6, 1))).toEqual([Date.UTC(2025, 6, 1)]);
    // On a month's first instant: the next cut is still six months on, never the same instant.
    expect(exportCuts(Date.UTC(2025, 7, 1), Date.UTC(2026, 9, 1))).toEqual([Date.UTC(2026, 1, 1), Date.UTC(2026, 7, 1)]);
    expect(exportCuts(Date.UTC(2026, 0, 1), Date.UTC(2025, 0, 1))).toEqual([]);
  });
});

/** Engine queries still running that read the big asset. */
const runningExports = () => runningQueries(t.deps.engine, ['%FROM ticks AS k%']);

describe('streaming over a real socket', () => {
  it('counts each export toward the daily limit: exact X-RateLimit-* on every format, in memory and on the wire', async () => {
    // A fresh monthly account (50,000 a day); the clock stands at NOW, so the counter resets at the
    // next UTC midnight, 2026-06-21T00:00:00Z = 1782000000 s.
    const key = await t.keyFor('monthly');
    const auth = { authorization: `Bearer ${key}` };
    const end = ticksOfA[20].t;
    const responses = [
      await t.app.request(exportUrl({ asset_id: A, start: START, end }), { headers: auth }),
      await t.app.request(exportUrl({ asset_id: A, start: START, end, format: 'jsonl' }), { headers: { ...auth, 'accept-encoding': 'gzip' } }),
      await t.app.request(exportUrl({ asset_id: A, start: START, end, format: 'parquet' }), { headers: auth }),
      await fetch(`http://127.0.0.1:${port}${exportUrl({ asset_id: A, start: START, end, format: 'jsonl' })}`, { headers: auth }),
    ];
    for (const [i, res] of responses.entries()) {
      expect(res.status).toBe(200);
      expect([i, res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining'), res.headers.get('x-ratelimit-reset')]).toEqual([
        i,
        '50000',
        String(50_000 - (i + 1)),
        '1782000000',
      ]);
      await res.arrayBuffer();
    }
    expect(responses[1].headers.get('content-encoding')).toBe('gzip');
    expect(Date.UTC(2026, 5, 21) / 1000).toBe(1782000000);
  });

  it('sends the first bytes before the query finishes, and a disconnect cancels the engine query (it leaves the process list)', async () => {
    const path = exportUrl({ asset_id: BIG, start: START, end: NOW, format: 'jsonl' });
    const received = await firstBytesThenDisconnect(port, path, t.key, runningExports);
    // Far less than the whole export (~3 M rows × ~100 bytes) was ever read.
    expect(received).toBeLessThan(100_000_000);
  });

  it('a failure after the first byte aborts the transfer', async () => {
    // Make the engine fail in the middle of the export: kill its query (ASYNC: the query stops at its
    // next step, which only comes when the client reads on).
    const res = await fetch(`http://127.0.0.1:${port}${exportUrl({ asset_id: BIG, start: START, end: NOW, format: 'csv' })}`, {
      headers: { authorization: `Bearer ${t.key}` },
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    await t.deps.engine.command(`KILL QUERY WHERE query LIKE '%FROM ticks AS k%' AND query NOT LIKE '%KILL%' ASYNC`);
    let failed = false;
    try {
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
      }
    } catch {
      failed = true;
    }
    expect(failed).toBe(true);
  });
});
