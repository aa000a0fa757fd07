import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LinesUnit, planImport } from '../src/ingest/import/plan.js';
import { runImport } from '../src/ingest/import/run.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { fixturePath } from './support/fixtures.js';
import { tableHashes as hashesOf } from './support/table-hashes.js';
import { json } from './support/ticks-fixture.js';

/**
 * `npm run import` (docs/INGEST.md §6) on the archive fixtures (test/fixtures/archives/): the books a
 * pmxt file gives equal an independent reconstruction from the file as ClickHouse's own Parquet
 * reader sees it; the missing hour is a source_missing gap; Tardis CSV and receive-stamped frames
 * make the rows their frames make; bad input is named with file and line or row group.
 */
const H = 3_600_000;
const H10 = Date.UTC(2026, 4, 1, 10);
const D2 = Date.UTC(2026, 4, 2);
const YES = '54533043819946592547517511176940999955633860128497669742211153063842200957669';
const NO = '87854174148074652060467921081181402357467303721471806610111179101805869578687';
const MARKET = '0x0f49db97f71c68b1e42a6d16e3de93d85dbf7d4148e3f018eb79e88554be9f75';
const GAMMA = JSON.parse(readFileSync(fixturePath('polymarket/gamma-markets.json'), 'utf8'));
const PMXT = fixturePath('archives/pmxt');

let t: DataApp;
let dir: string;

beforeAll(async () => {
  t = await startDataApp(Date.UTC(2026, 5, 1));
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-import-'));
});

afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

const q = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();

interface PmxtRow {
  t: number;
  asset_id: string;
  event_type: string;
  bids: string | null;
  asks: string | null;
  price: string | null;
  size: string | null;
  side: string | null;
}

/** The rows as chDB's own Parquet reader (not hyparquet, which the importer uses) returns them, in a child process. */
function chdbRows(path: string): PmxtRow[] {
  const sql = `SELECT toUnixTimestamp64Milli(timestamp) AS t, asset_id, event_type, bids, asks, toString(price) AS price, toString(size) AS size, side
    FROM file('${path}', Parquet)`;
  const out = execFileSync(process.execPath, ['-e', `process.stdout.write(require('chdb').query(process.argv[1], 'JSONEachRow'))`, sql], {
    encoding: 'utf8',
  });
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

type Side = Map<number, number>;

/**
 * The book of `asset` as of `at`, from the spec (docs/API.md /v1/orderbook): every book-changing
 * event with t ≤ at in order of t, then arrival (file order); a `book` replaces both sides, a change
 * sets a level's size (0 removes it).
 */
function referenceBook(
  rows: PmxtRow[],
  asset: string,
  at: number,
): { bids: { price: number; size: number }[]; asks: { price: number; size: number }[] } | null {
  const events = rows
    .map((r, i) => ({ r, i }))
    .filter(({ r }) => r.asset_id === asset && r.t <= at && (r.event_type === 'book' || r.event_type === 'price_change'))
    .sort((a, b) => a.r.t - b.r.t || a.i - b.i);
  if (!events.some(({ r }) => r.event_type === 'book')) return null;
  let bids: Side = new Map();
  let asks: Side = new Map();
  for (const { r } of events) {
    if (r.event_type === 'book') {
      bids = new Map((JSON.parse(r.bids!) as string[][]).map(([p, s]) => [Number(p), Number(s)]));
      asks = new Map((JSON.parse(r.asks!) as string[][]).map(([p, s]) => [Number(p), Number(s)]));
    } else {
      const side = r.side === 'BUY' ? bids : asks;
      if (Number(r.size) === 0) side.delete(Number(r.price));
      else side.set(Number(r.price), Number(r.size));
    }
  }
  const levels = (s: Side, desc: boolean) => [...s].sort((a, b) => (desc ? b[0] - a[0] : a[0] - b[0])).map(([price, size]) => ({ price, size }));
  return { bids: levels(bids, true), asks: levels(asks, false) };
}

describe('pmxt', () => {
  it('imports both hours, states the missing one, and its books equal a reconstruction from the file', async () => {
    const plan = await planImport('pmxt', [PMXT]);
    expect(plan.units.map((u) => u.span)).toEqual([
      [H10, H10 + H],
      [H10 + 2 * H, H10 + 3 * H],
    ]);
    expect(plan.missing).toEqual([[H10 + H, H10 + 2 * H]]);
    const summary = await runImport(t.te.engine, plan, { markets: GAMMA });
    expect(summary.problems).toBe(0);
    expect(summary.malformed).toBe(0);
    // 21 rows: 3 books, 12 price changes, 3 trades (ticks), 3 tick size changes (market events).
    expect(summary.rows).toMatchObject({ ticks: 18, book_snapshots: 3, market_events: 3, book_checks: 3 });

    const rows = readdirSync(PMXT).flatMap((f) => chdbRows(join(PMXT, f)));
    expect(rows.length).toBe(21);
    // Every tick carries its outcome label from --markets, the changes the engine inserts itself included.
    const sides = await t.te.engine.rows<{ asset_id: string; event: string; sides: string[]; n: number }>(
      `SELECT asset_id, toString(event) AS event, groupUniqArray(toString(side)) AS sides, count() AS n FROM ticks GROUP BY asset_id, event`,
    );
    const expectedSides = new Map<string, number>();
    for (const r of rows.filter((r) => r.event_type !== 'tick_size_change')) {
      const key = `${r.asset_id} ${r.event_type} ${r.asset_id === YES ? 'YES' : 'NO'}`;
      expectedSides.set(key, (expectedSides.get(key) ?? 0) + 1);
    }
    expect(new Map(sides.map((r) => [`${r.asset_id} ${r.event} ${r.sides.join(',')}`, Number(r.n)]))).toEqual(expectedSides);
    expect(sides.find((r) => r.asset_id === YES && r.event === 'price_change')?.n).toBe(8);
    const instants = [...new Set(rows.flatMap((r) => [r.t - 1, r.t, r.t + 1]))].sort((a, b) => a - b);
    let compared = 0;
    for (const asset of [YES, NO]) {
      for (const at of instants) {
        const expected = referenceBook(rows, asset, at);
        const res = await t.get(`/v1/orderbook?${q({ asset_id: asset, timestamp: at, limit: 100 })}`, { authorization: `Bearer ${t.key}` });
        if (expected === null) {
          expect(res.status, `${asset} at ${at}`).toBe(404);
          continue;
        }
        const body = await json(res);
        expect({ bids: body.data.bids, asks: body.data.asks }, `${asset} at ${at}`).toEqual(expected);
        expect(body.data.market).toBe(MARKET);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(60);
    // ~130 requests: the HTTP backend on 2 shared cores needs more than the default.
  }, 300_000);

  it('keeps trades exactly: size to 6 decimals, fee rate, transaction hash, receive time', async () => {
    const res = await t.get(`/v1/ticks?${q({ asset_id: YES, start: H10, end: H10 + H, event_type: 'last_trade_price', fields: 'taker_side,local_t' })}`, {
      authorization: `Bearer ${t.key}`,
    });
    const body = await json(res);
    expect(body.data).toEqual([
      {
        t: H10 + 2999,
        event: 'last_trade_price',
        side: 'YES',
        best_bid: 0.42,
        best_ask: 0.45,
        price: 0.45,
        size: 3149725.123456,
        taker_side: 'buy',
        local_t: H10 + 3000,
      },
    ]);
    const [trade] = await t.te.engine.rows<{ fee_rate_bps: number; tx_hash: string }>(
      `SELECT fee_rate_bps, tx_hash FROM ticks WHERE asset_id = {a:String} AND event = 'last_trade_price' AND t < fromUnixTimestamp64Milli({end:Int64}, 'UTC')`,
      { params: { a: YES, end: H10 + H } },
    );
    expect(trade).toEqual({ fee_rate_bps: 1000, tx_hash: `0x${'ab'.repeat(32)}` });
  });

  it('coverage: the hours present are captured, the missing hour is source_missing, an hour without the asset not_subscribed', async () => {
    const cov = async (asset: string) =>
      (await json(await t.get(`/v1/coverage?${q({ asset_id: asset, start: H10, end: H10 + 3 * H })}`, { authorization: `Bearer ${t.key}` }))).data;
    expect(await cov(YES)).toMatchObject({
      captured: [
        { from: H10, to: H10 + H },
        { from: H10 + 2 * H, to: H10 + 3 * H },
      ],
      gaps: [{ from: H10 + H, to: H10 + 2 * H, reason: 'source_missing' }],
    });
    // The ledger counts, per asset, what each hour's import stored of it.
    expect((await cov(YES)).imports).toEqual([
      { format: 'pmxt', unit: 'pmxt:2026-05-01T10', from: H10, to: H10 + H, events: 7, imported_at: expect.any(Number) },
      { format: 'pmxt', unit: 'pmxt:2026-05-01T12', from: H10 + 2 * H, to: H10 + 3 * H, events: 7, imported_at: expect.any(Number) },
    ]);
    expect(await cov(NO)).toMatchObject({
      captured: [{ from: H10, to: H10 + H }],
      gaps: [
        { from: H10 + H, to: H10 + 2 * H, reason: 'source_missing' },
        { from: H10 + 2 * H, to: H10 + 3 * H, reason: 'not_subscribed' },
      ],
    });
  });

  it('stores the protocol version its --markets file states for each token (a market without one is read as v1)', async () => {
    const rows = await t.te.engine.rows<{ asset_id: string; market: string; protocol_version: string }>(
      'SELECT asset_id, market, protocol_version FROM market_protocols FINAL ORDER BY asset_id',
    );
    expect(rows).toEqual([YES, NO].sort().map((asset_id) => ({ asset_id, market: MARKET, protocol_version: 'v1' })));
    const answer = await (await t.get(`/v1/instruments?${q({ asset_id: YES, timestamp: H10 + H })}`)).json();
    expect([answer.data.protocol_version, answer.data.source.protocol_version]).toEqual(['v1', 'metadata']);
  });

  it('a second import of the same files adds nothing', async () => {
    const before = await tableHashes();
    const summary = await runImport(t.te.engine, await planImport('pmxt', [PMXT]), { markets: GAMMA });
    expect(summary.problems).toBe(0);
    expect(await tableHashes()).toEqual(before);
  });
});

describe('tardis', () => {
  it('a day of incremental_book_L2 + trades: books, changes and trades as the frames they record', async () => {
    const plan = await planImport('tardis', [fixturePath('archives/tardis')]);
    expect(plan.units.length).toBe(1);
    const summary = await runImport(t.te.engine, plan, { markets: GAMMA });
    expect(summary.problems).toBe(0);
    expect(summary.rows).toMatchObject({ ticks: 7, book_snapshots: 2, book_checks: 2 });
    const ticks = await json(
      await t.get(`/v1/ticks?${q({ asset_id: YES, start: D2, end: D2 + H, fields: 'book_side,taker_side,local_t' })}`, { authorization: `Bearer ${t.key}` }),
    );
    const tick = (s: number, event: string, bb: number, ba: number, price: number, size: number, book_side: string, taker: string, localUs: number) => ({
      t: D2 + s,
      event,
      side: 'YES',
      best_bid: bb,
      best_ask: ba,
      price,
      size,
      book_side,
      taker_side: taker,
      local_t: D2 + localUs / 1000,
    });
    expect(ticks.data).toEqual([
      tick(5000, 'book', 0.41, 0.45, 0, 0, '', '', 5_012_345),
      tick(6000, 'price_change', 0.42, 0.45, 0.42, 75, 'bid', '', 6_001_000),
      tick(6000, 'price_change', 0.42, 0.46, 0.45, 0, 'ask', '', 6_001_000),
      tick(7000, 'last_trade_price', 0.42, 0.46, 0.46, 12, '', 'buy', 7_000_200),
      tick(9000, 'price_change', 0.42, 0.44, 0.44, 10.5, 'ask', '', 9_000_500),
      tick(60000, 'book', 0.43, 0.47, 0, 0, '', '', 60_000_700),
      tick(61000, 'last_trade_price', 0.43, 0.47, 0.43, 5.5, '', 'sell', 61_000_100),
    ]);
    const book = await json(await t.get(`/v1/orderbook?${q({ asset_id: YES, timestamp: D2 + 59_999 })}`, { authorization: `Bearer ${t.key}` }));
    expect(book.data.bids).toEqual([
      { price: 0.42, size: 75 },
      { price: 0.41, size: 200 },
      { price: 0.4, size: 500 },
    ]);
    expect(book.data.asks).toEqual([
      { price: 0.44, size: 10.5 },
      { price: 0.46, size: 120 },
    ]);
    expect(book.data.market).toBe(MARKET);
  });
});

describe('frames', () => {
  it('a zstd slice with receive stamps: the same rows as the plain file, and its empty line a disconnect', async () => {
    const plain = await planImport('frames', [fixturePath('archives/frames/slice.jsonl')]);
    const zstd = await planImport('frames', [fixturePath('archives/frames/slice.jsonl.zst')]);
    const a = await runImport(t.te.engine, zstd);
    expect(a.problems).toBe(0);
    expect(a.rows).toMatchObject({ ticks: 5, book_snapshots: 3 });
    // Read through the same lines: the plain file is another source (its own id) with identical rows.
    const lines: string[] = [];
    for await (const l of (plain.units[0] as LinesUnit).lines({ report: () => {}, onBytes: () => {}, assets: () => [] })) lines.push(...l);
    const zlines: string[] = [];
    for await (const l of (zstd.units[0] as LinesUnit).lines({ report: () => {}, onBytes: () => {}, assets: () => [] })) zlines.push(...l);
    expect(zlines.map((l) => l.replace(/import-frames-[0-9a-f]+/, 'RUN'))).toEqual(lines.map((l) => l.replace(/import-frames-[0-9a-f]+/, 'RUN')));
    const asset = '25245433628208476987364023432306599125597948324625578977436890641930158259698';
    const T = 1766481546487;
    const cov = (await json(await t.get(`/v1/coverage?${q({ asset_id: asset, start: T, end: T + 6000 })}`, { authorization: `Bearer ${t.key}` }))).data;
    // Captured from the first receive stamp (T+12) to the last frame before the empty line (T+900),
    // disconnected until the next stamped frame (T+5000), captured to the last stamp + 1 ms.
    expect(cov.captured).toEqual([
      { from: T + 12, to: T + 900 },
      { from: T + 5000, to: T + 5001 },
    ]);
    expect(cov.gaps).toEqual([
      // Before the first run this store ever saw (the pmxt and Tardis runs are later): unknown.
      { from: T, to: T + 12, reason: 'unknown' },
      { from: T + 900, to: T + 5000, reason: 'disconnected' },
      { from: T + 5001, to: T + 6000, reason: 'not_recording' },
    ]);
  });
});

describe('bad input', () => {
  it('names the file and the line or row group; the other files are imported; the run reports failure', async () => {
    const bad = join(dir, 'bad');
    rmSync(bad, { recursive: true, force: true });
    execFileSync('mkdir', ['-p', bad]);
    // A truncated Parquet file (footer gone), a file with an unknown column, and a good hour.
    const good = readFileSync(join(PMXT, 'polymarket_orderbook_2026-05-01T12.parquet'));
    writeFileSync(join(bad, 'polymarket_orderbook_2026-05-03T00.parquet'), good.subarray(0, good.length - 100));
    copyFileSync(join(PMXT, 'polymarket_orderbook_2026-05-01T12.parquet'), join(bad, 'polymarket_orderbook_2026-05-03T01.parquet'));
    const plan = await planImport('pmxt', [bad]);
    expect(plan.problems).toEqual([
      { file: join(bad, 'polymarket_orderbook_2026-05-03T00.parquet'), where: '', message: expect.stringMatching(/^not a readable Parquet file/) },
    ]);
    expect(plan.units.length).toBe(1);

    const frames = join(bad, 'frames.jsonl');
    const real = readFileSync(fixturePath('archives/frames/slice.jsonl'), 'utf8').split('\n');
    writeFileSync(frames, [real[0], 'this is not JSON', real[1]].join('\n'));
    const fplan = await planImport('frames', [frames]);
    const seen: string[] = [];
    const fs = await runImport(t.te.engine, fplan, { onProblem: (p) => seen.push(`${p.where}: ${p.message}`) });
    expect(fs.problems).toBe(1);
    expect(seen).toEqual(['line 2: 1 line(s) the normalizer rejected (not JSON, or an event missing a field)']);
    // Lines 1 and 3: two books, then a change of both assets.
    expect(fs.rows.ticks).toBe(4);

    // A zstd file cut short: the frames decoded so far are not a clean import's last batch; the error names the file.
    const zst = readFileSync(fixturePath('archives/frames/slice.jsonl.zst'));
    const cut = join(bad, 'cut.jsonl.zst');
    writeFileSync(cut, zst.subarray(0, zst.length - 40));
    const ticksBefore = await storedTicks();
    const zs = await runImport(t.te.engine, await planImport('frames', [cut]));
    // Nothing of the cut file is stored: its rows never filled a batch, and a partial batch is not sent.
    expect(await storedTicks()).toBe(ticksBefore);
    expect(zs.firstProblems).toEqual([{ file: cut, where: '', message: 'stopped: unexpected end of zstd data (truncated file)' }]);
    expect(zs.failedUnits).toBe(1);

    const csvDir = join(bad, 'csv');
    execFileSync('mkdir', ['-p', csvDir]);
    const csvLines = [
      'exchange,symbol,timestamp,local_timestamp,id,side,price,amount',
      `polymarket,${YES},1000,2000,,buy,0.5,1`,
      `polymarket,${YES},1000,x,,buy,0.5,1`,
      `polymarket,${YES},3000,4000,,sideways,0.5,1`,
    ];
    const csv = `${csvLines.join('\n')}\n`;
    writeFileSync(join(csvDir, `polymarket_trades_2026-05-04_${YES}.csv`), csv);
    // A gzip file cut short.
    const gz = readFileSync(fixturePath(`archives/tardis/polymarket_incremental_book_L2_2026-05-02_${YES}.csv.gz`));
    writeFileSync(join(csvDir, `polymarket_incremental_book_L2_2026-05-05_${YES}.csv.gz`), gz.subarray(0, gz.length - 12));
    const problems: string[] = [];
    const csvBefore = await storedTicks();
    const cs = await runImport(t.te.engine, await planImport('tardis', [csvDir]), {
      onProblem: (p) => problems.push(`${p.file.slice(csvDir.length + 1, csvDir.length + 40)} ${p.where}: ${p.message}`),
    });
    expect(problems).toEqual([
      'polymarket_incremental_book_L2_2026-05- : stopped: the file is cut short or corrupt (ZLIB_INFLATE_FAILED)',
      'polymarket_trades_2026-05-04_5453304381 line 3: timestamp and local_timestamp must be integer µs',
      'polymarket_trades_2026-05-04_5453304381 line 4: side "sideways" is not buy, sell or unknown',
    ]);
    expect(cs.failedUnits).toBe(1);
    expect(cs.rows.ticks).toBe(1);
    // Only the good trade: the cut book file left nothing behind.
    expect(await storedTicks()).toBe(csvBefore + 1);
  });
});

async function storedTicks(): Promise<number> {
  return Number((await t.te.engine.rows<{ n: string }>('SELECT count() AS n FROM ticks'))[0].n);
}

async function tableHashes(): Promise<Record<string, string>> {
  return hashesOf(t.te.engine);
}
