import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planImport } from '../src/ingest/import/plan.js';
import { runImport } from '../src/ingest/import/run.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { fixturePath } from './support/fixtures.js';
import { json } from './support/ticks-fixture.js';

/**
 * `npm run import` on input an attacker or a careless folder gives it (issue 36, docs/INGEST.md §6.5):
 * every problem named, a clear exit code, nothing unbounded; and Tardis folders as tardis-dev fills them
 * (a grouped trades file beside per-token ones, derived data types, the 00:00 snapshot).
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const YES = '54533043819946592547517511176940999955633860128497669742211153063842200957669';
const NO = '87854174148074652060467921081181402357467303721471806610111179101805869578687';
const D = Date.UTC(2026, 4, 2);
let dir: string;
let t: DataApp;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-import-inputs-'));
  t = await startDataApp(D + 5 * 86_400_000);
}, 60_000);

afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `npm run import -- …args` on a store of its own; its exit code, stdout and stderr. */
function cli(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/import.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, CLICKHOUSE_URL: '', DATA_DIR: join(dir, 'store'), LOG_LEVEL: 'warn' },
    encoding: 'utf8',
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('the command line', () => {
  it('a date that does not exist is an error (Date.parse would start on March 2)', () => {
    const r = cli('pmxt', fixturePath('archives/pmxt'), '--from', '2026-02-30', '--dry-run');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--from "2026-02-30" is neither an existing ISO 8601 date or time/);
    expect(cli('pmxt', fixturePath('archives/pmxt'), '--from', '2026-02-28T24:00Z', '--dry-run').code).toBe(2);
  });

  it('plans from what the files hold: the widest range lists the files and the hour between them', () => {
    const r = cli('pmxt', fixturePath('archives/pmxt'), '--from', '0', '--to', '8640000000000000', '--dry-run');
    expect(r.code).toBe(0);
    expect(r.out.trim().split('\n')).toEqual([
      'Would import 2 unit(s) of pmxt (nothing is written):',
      expect.stringMatching(
        /^ {2}polymarket_orderbook_2026-05-01T10\.parquet \(pmxt v2, 14 rows in 4 row groups\): 8405 bytes, covers 2026-05-01T10:00:00\.000Z/,
      ),
      expect.stringMatching(
        /^ {2}polymarket_orderbook_2026-05-01T12\.parquet \(pmxt v2, 7 rows in 2 row groups\): 4436 bytes, covers 2026-05-01T12:00:00\.000Z/,
      ),
      '  missing 2026-05-01T11:00:00.000Z → 2026-05-01T12:00:00.000Z: a source_missing gap',
    ]);
  });

  it('a device is not read (/dev/zero never ends), a folder without the format is an error, a --markets that is not JSON is named', () => {
    const zero = cli('frames', '/dev/zero', '--dry-run');
    expect(zero.code).toBe(2);
    expect(zero.err).toMatch(/^import: \/dev\/zero is not a regular file/);
    const empty = join(dir, 'no-tardis');
    mkdirSync(empty);
    writeFileSync(join(empty, 'README.md'), 'not data\n');
    const none = cli('tardis', empty);
    expect(none.code).toBe(1);
    expect(none.err).toContain(`import: ${empty}: no tardis file (a directory is searched for`);
    const markets = join(dir, 'markets.txt');
    writeFileSync(markets, 'conditionId,question\n');
    const bad = cli('pmxt', fixturePath('archives/pmxt'), '--markets', markets);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(new RegExp(`^import: ${markets}: not JSON \\(`));
  });

  it('a line without an end is read no further than 64 MiB: named with its offset, the lines after it imported', () => {
    const real = readFileSync(fixturePath('archives/frames/slice.jsonl'), 'utf8').split('\n');
    const file = join(dir, 'long-line.jsonl');
    writeFileSync(file, Buffer.concat([Buffer.from(`${real[0]}\n`), Buffer.alloc(65 * 2 ** 20, 0x7b), Buffer.from(`\n${real[1]}\n`)]));
    const r = cli('frames', file);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`import: ${file} line 2: longer than 64 MiB (from byte ${real[0].length + 1}): not read, the lines after it are`);
    // Lines 1 and 3: two books, then a change of both assets.
    expect(r.out).toMatch(/written {2}ticks 4, book_snapshots 2,/);
  });
});

describe('a folder of Tardis downloads', () => {
  it('a grouped trades file beside the per-token ones, derived data types, and the 00:00 snapshot', async () => {
    const folder = join(dir, 'tardis');
    mkdirSync(folder);
    const day = '2026-05-02';
    const us = (ms: number) => String(ms * 1000);
    // YES: book and trades files of its own (the fixture's); NO: only a book file.
    for (const name of [`polymarket_incremental_book_L2_${day}_${YES}.csv.gz`, `polymarket_trades_${day}_${YES}.csv.gz`]) {
      copyFileSync(fixturePath(`archives/tardis/${name}`), join(folder, name));
    }
    const book = [
      'exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount',
      // Tardis's own book at 00:00 (both times the day's start): not a message of the exchange.
      `polymarket,${NO},${us(D)},${us(D)},true,ask,0.58,100`,
      `polymarket,${NO},${us(D)},${us(D)},true,bid,0.55,40`,
      `polymarket,${NO},${us(D + 1000)},${us(D + 1001)},false,bid,0.56,10`,
    ];
    writeFileSync(join(folder, `polymarket_incremental_book_L2_${day}_${NO}.csv.gz`), gzipSync(`${book.join('\n')}\n`));
    // Tardis's grouped file: every symbol's trades of the day (YES's are in its own file too).
    const grouped = [
      'exchange,symbol,timestamp,local_timestamp,id,side,price,amount',
      `polymarket,${YES},${us(D + 7000)},${us(D + 7000) + 200},0x${'cd'.repeat(32)},buy,0.46,12`,
      `polymarket,${NO},${us(D + 2000)},${us(D + 2001)},,sell,0.56,3`,
    ];
    writeFileSync(join(folder, `polymarket_trades_${day}_PREDICTIONS.csv.gz`), gzipSync(`${grouped.join('\n')}\n`));
    writeFileSync(join(folder, `polymarket_book_snapshot_25_${day}_${YES}.csv.gz`), gzipSync('derived\n'));
    writeFileSync(join(folder, `polymarket_quotes_${day}_${YES}.csv.gz`), gzipSync('derived\n'));

    const plan = await planImport('tardis', [folder]);
    expect(plan.problems).toEqual([]);
    expect(plan.notes).toEqual([
      'skipped 2 file(s) of Tardis data derived from incremental_book_L2 and trades ' +
        `(polymarket_book_snapshot_25_${day}_${YES}.csv.gz, polymarket_quotes_${day}_${YES}.csv.gz)`,
      `polymarket_trades_${day}_PREDICTIONS.csv.gz: the trades of 1 symbol(s) are taken from their own files`,
    ]);
    const summary = await runImport(t.te.engine, plan);
    expect(summary.problems).toBe(0);
    const ticks = async (asset: string) =>
      (await json(await t.get(`/v1/ticks?asset_id=${asset}&start=${D}&end=${D + 86_400_000}&fields=taker_side`))).data.map(
        (x: { t: number; event: string; price: number; taker_side: string }) => [x.t - D, x.event, x.price, x.taker_side],
      );
    // YES: its own trades once (the grouped file's copy of them is not read).
    expect((await ticks(YES)).filter((x: unknown[]) => x[1] === 'last_trade_price')).toEqual([
      [7000, 'last_trade_price', 0.46, 'buy'],
      [61000, 'last_trade_price', 0.43, 'sell'],
    ]);
    // NO: no `book` tick at 00:00 (Tardis's snapshot is kept as a checkpoint), its change, its trade from the grouped file.
    expect(await ticks(NO)).toEqual([
      [1000, 'price_change', 0.56, ''],
      [2000, 'last_trade_price', 0.56, 'sell'],
    ]);
    const at = (ms: number) => t.get(`/v1/orderbook?asset_id=${NO}&timestamp=${D + ms}`);
    expect((await json(await at(500))).data).toMatchObject({ bids: [{ price: 0.55, size: 40 }], asks: [{ price: 0.58, size: 100 }] });
    expect((await json(await at(1500))).data.bids).toEqual([
      { price: 0.56, size: 10 },
      { price: 0.55, size: 40 },
    ]);
    const [{ n }] = await t.te.engine.rows<{ n: string }>(
      `SELECT toString(count()) AS n FROM book_snapshots WHERE asset_id = {a:String} AND is_checkpoint = 1 AND t = fromUnixTimestamp64Milli({d:Int64}, 'UTC')`,
      { params: { a: NO, d: D } },
    );
    expect(n).toBe('1');
  });
});
