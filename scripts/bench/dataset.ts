import { cpSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EmbeddedEngine } from '../../src/clickhouse/embedded.js';
import type { Engine } from '../../src/clickhouse/engine.js';
import { runMigrations } from '../../src/clickhouse/migrations.js';

/**
 * The benchmark dataset, generated inside the engine with INSERT … SELECT (seconds, not minutes),
 * built once and cached under `.bench-data/`. The materialized views fill the candle rollups
 * (ohlcv_1m, ohlcv_1h, ohlcv_1d), asset_stats and activity_1m exactly as live ingest would.
 *
 * Shape: 8 assets (4 markets × YES/NO), 21 M ticks; the largest asset has 6 M ticks over 1,100 days
 * (so 1,000 daily candles exist), the others 2.14 M each over the last 60 days. Timestamps come in
 * runs of 4 equal values (arrival order by seq); 1 tick in 50 is a last_trade_price; an exchange
 * `book` per asset per hour (tick + snapshot), and a checkpoint snapshot every 200 ticks, 20–40
 * levels per side around the tick's best bid/ask.
 *
 * A larger archive (BENCH_TICKS, e.g. 100000000) holds that same group of 8 assets, unchanged, and
 * as many more groups as the size asks for (one per 21 M ticks): other markets, whose large asset
 * also spans the 1,100 days and whose others cover earlier 60-day stretches. The bench asks both
 * archives the same questions about the first group, so what differs between the two is only how
 * much else is stored beside the answer.
 */
export const DATASET_VERSION = 6;
export const DATASET_END = Date.UTC(2026, 8, 1);
const DAY = 86_400_000;

export interface BenchAsset {
  asset_id: string;
  market: string;
  outcome: 'Yes' | 'No';
  ticks: number;
  start: number;
  end: number;
}

export interface DatasetInfo {
  version: number;
  assets: BenchAsset[];
  /** The asset with the most ticks (exports, candles, order books). */
  largest: BenchAsset;
  ticks: number;
  snapshots: number;
  buildSeconds: number;
  /** Groups of 8 assets (GROUP_TICKS each): 1 for the default dataset. */
  groups: number;
}

/** Ticks of one group of assets (the default dataset); a larger archive holds whole groups. */
export const GROUP_TICKS = 21_000_000;

function plan(groups: number): BenchAsset[] {
  const assets: BenchAsset[] = [];
  for (let g = 0; g < groups; g++) {
    // Group 0's 60-day assets end with the dataset, group g's g × 60 days earlier.
    const end = DATASET_END - g * 60 * DAY;
    for (let m = 0; m < 4; m++) {
      for (const [o, outcome] of (['Yes', 'No'] as const).entries()) {
        const large = m === 0 && o === 0;
        assets.push({
          asset_id: `${71_000_000_000_000 + g * 1000 + m * 10 + o}${'7'.repeat(60)}`,
          market: g === 0 ? `0x${(m + 1).toString(16).padStart(64, 'b')}` : `0x${(g * 16 + m).toString(16).padStart(64, 'c')}`,
          outcome,
          ticks: large ? 6_000_000 : 2_142_858,
          start: large ? DATASET_END - 1_100 * DAY : end - 60 * DAY,
          end: large ? DATASET_END : end,
        });
      }
    }
  }
  return assets;
}

/** Groups of GROUP_TICKS in an archive of `ticks` (BENCH_TICKS), at least one. */
export function groupsFor(ticks: number): number {
  return Math.max(1, Math.round(ticks / GROUP_TICKS));
}

/**
 * `raw` (opened by the bench process) and `service` (by the service process) are identical copies: one chDB directory per process.
 * The default dataset (one group) lives in `root` itself, a larger one in `root/groups-<n>`.
 */
export function benchPaths(root: string, groups = 1) {
  const dir = groups === 1 ? root : join(root, `groups-${groups}`);
  return { root: dir, build: join(dir, 'build'), raw: join(dir, 'raw'), service: join(dir, 'service'), info: join(dir, 'dataset.json') };
}

export function cachedDataset(root: string, groups = 1): DatasetInfo | null {
  const paths = benchPaths(root, groups);
  if (!existsSync(paths.info) || !existsSync(paths.raw) || !existsSync(paths.service)) return null;
  const info = JSON.parse(readFileSync(paths.info, 'utf8')) as DatasetInfo;
  return info.version === DATASET_VERSION ? { ...info, groups: info.groups ?? 1 } : null;
}

/** Generates the dataset into `engine` (freshly migrated, empty). */
export async function generateDataset(engine: Engine, log: (line: string) => void, groups = 1): Promise<DatasetInfo> {
  const started = performance.now();
  const assets = plan(groups);
  // Bulk generation: no retried blocks to drop, and blocks of equal content across assets are not
  // duplicates.
  const settings = 'SETTINGS insert_deduplicate = 0, max_insert_threads = 2';
  for (const a of assets) {
    const params = { asset_id: a.asset_id, market: a.market, side: a.outcome.toUpperCase(), n: a.ticks, start: a.start, span: a.end - a.start };
    // Ticks: runs of 4 equal timestamps; best bid drifts slowly, spread 1–3 cents; even price_changes
    // set a bid level at or below the best bid, odd ones an ask level above it.
    await engine.command(
      `INSERT INTO ticks (asset_id, t, seq, event, side, book_side, best_bid, best_ask, price, size, market)
SELECT {asset_id:String}, fromUnixTimestamp64Milli(toInt64({start:Int64} + intDiv(intDiv(number, 4) * 4 * {span:Int64}, {n:UInt64})), 'UTC'),
  number, if(number % 50 = 49, 'last_trade_price', 'price_change'), {side:String},
  if(number % 50 = 49, '', if(number % 2 = 0, 'BUY', 'SELL')),
  bid, bid + 0.01 * (1 + number % 3),
  if(number % 2 = 0, bid - 0.01 * (number % 7), bid + 0.01 * (1 + number % 5)),
  if(number % 9 = 0, 0, round(10 + (cityHash64(number) % 50000) / 100, 2)), {market:String}
FROM (SELECT number, round(0.30 + 0.40 * (0.5 + 0.5 * sin(number / 7919.0)) + 0.01 * (cityHash64(number, 1) % 3), 2) AS bid
      FROM numbers({n:UInt64}))
${settings}`,
      { params },
    );
    // One exchange book per hour: a tick and an exchange snapshot at the same (t, seq).
    const hourly = `SELECT fromUnixTimestamp64Milli(toInt64(intDiv({start:Int64}, 3600000) * 3600000 + (number + 1) * 3600000), 'UTC') AS t,
  toUInt64(1000000000000 + number) AS seq, round(0.30 + 0.40 * (0.5 + 0.5 * sin(number / 97.0)), 2) AS bid, 20 + number % 21 AS depth
FROM numbers(intDiv({span:Int64}, 3600000))`;
    await engine.command(
      `INSERT INTO ticks (asset_id, t, seq, event, side, best_bid, best_ask, price, size, market)
SELECT {asset_id:String}, t, seq, 'book', {side:String}, bid, bid + 0.01, 0, 0, {market:String} FROM (${hourly}) ${settings}`,
      { params },
    );
    await engine.command(
      `INSERT INTO book_snapshots (asset_id, t, seq, is_checkpoint, market, bids, asks)
SELECT {asset_id:String}, t, seq, 0, {market:String},
  arrayMap(i -> (round(bid - 0.01 * i, 2), round(50 + (cityHash64(seq, i) % 100000) / 100, 2)), range(least(depth, toUInt32(bid * 100)))),
  arrayMap(i -> (round(bid + 0.01 * (i + 1), 2), round(50 + (cityHash64(seq, i, 1) % 100000) / 100, 2)), range(least(depth, toUInt32((0.99 - bid) * 100))))
FROM (${hourly}) ${settings}`,
      { params },
    );
    // A checkpoint every 200 ticks (on a price_change: seq % 50 = 49 are the trades), at that tick's
    // (t, seq), levels around its bid/ask.
    await engine.command(
      `INSERT INTO book_snapshots (asset_id, t, seq, is_checkpoint, market, bids, asks)
SELECT asset_id, t, seq, 1, market,
  arrayMap(i -> (round(best_bid - 0.01 * i, 2), round(50 + (cityHash64(seq, i) % 100000) / 100, 2)), range(least(20 + seq % 21, toUInt32(best_bid * 100)))),
  arrayMap(i -> (round(best_ask + 0.01 * i, 2), round(50 + (cityHash64(seq, i, 1) % 100000) / 100, 2)), range(least(20 + seq % 21, toUInt32((1 -
    best_ask) * 100))))
FROM ticks
WHERE asset_id = {asset_id:String} AND event = 'price_change' AND seq < 1000000000000 AND seq % 200 = 0
${settings}`,
      { params },
    );
    await engine.command(
      `INSERT INTO markets (asset_id, market, outcome, question, slug, updated_at)
VALUES ({asset_id:String}, {market:String}, {outcome:String}, {question:String}, {slug:String}, now64(3))`,
      { params: { ...params, outcome: a.outcome, question: `Bench market ${a.market.slice(-4)}?`, slug: `bench-${a.market.slice(-4)}` } },
    );
    log(`  ${a.asset_id.slice(0, 16)}…: ${a.ticks.toLocaleString('en-US')} ticks`);
  }
  await engine.command('OPTIMIZE TABLE asset_stats FINAL');
  // The reconstruction tables as background merges leave a table that has run for a while (one
  // part): a lookup opens every part holding older rows of the asset, and a fresh bulk load would
  // measure the load's part layout instead.
  await engine.command('OPTIMIZE TABLE book_snapshots FINAL');
  await engine.command('OPTIMIZE TABLE book_events FINAL');
  const [counts] = await engine.rows<{ ticks: string; snapshots: string }>(
    'SELECT (SELECT count() FROM ticks) AS ticks, (SELECT count() FROM book_snapshots) AS snapshots',
  );
  const withCounts = await Promise.all(
    assets.map(async (a) => {
      const [r] = await engine.rows<{ n: string }>('SELECT count() AS n FROM ticks WHERE asset_id = {a:String}', { params: { a: a.asset_id } });
      return { ...a, ticks: Number(r.n) };
    }),
  );
  // The first of the largest: group 0's, the same asset in every archive size.
  const largest = withCounts.reduce((x, y) => (y.ticks > x.ticks ? y : x));
  return {
    version: DATASET_VERSION,
    assets: withCounts,
    largest,
    ticks: Number(counts.ticks),
    snapshots: Number(counts.snapshots),
    buildSeconds: Math.round((performance.now() - started) / 100) / 10,
    groups,
  };
}

/**
 * Builds the dataset in a child process (a process may open one chDB directory, and the bench process
 * opens the raw copy afterwards), then moves it to the raw-engine copy and copies that for the
 * service.
 */
export async function ensureDataset(root: string, log: (line: string) => void, groups = 1): Promise<DatasetInfo> {
  const cached = cachedDataset(root, groups);
  if (cached) return cached;
  const paths = benchPaths(root, groups);
  for (const dir of [paths.build, paths.raw, paths.service]) rmSync(dir, { recursive: true, force: true });
  log(`building the benchmark dataset in ${paths.build} (once; cached afterwards)`);
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, paths.build, String(groups)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let info: DatasetInfo | undefined;
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    const lines = out.split('\n');
    out = lines.pop()!;
    for (const line of lines) {
      if (line.startsWith('{')) info = JSON.parse(line) as DatasetInfo;
      else if (line) log(line);
    }
  });
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  if (code !== 0 || !info) throw new Error(`dataset build failed (exit ${code})`);
  renameSync(paths.build, paths.raw);
  cpSync(paths.raw, paths.service, { recursive: true });
  writeFileSync(paths.info, JSON.stringify(info, null, 2));
  return info;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const dir = process.argv[2];
  const engine = EmbeddedEngine.open(dir, 2);
  await runMigrations(engine);
  const info = await generateDataset(engine, (line) => process.stdout.write(`${line}\n`), Number(process.argv[3] ?? 1));
  await engine.close();
  process.stdout.write(`${JSON.stringify(info)}\n`);
  process.exit(0);
}
