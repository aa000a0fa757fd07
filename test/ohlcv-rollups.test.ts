import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { type Candle, type CandleQuery, queryCandles, type Resolution } from '../src/queries/ohlcv.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { prng } from './support/ticks-fixture.js';

/**
 * The candle rollups (clickhouse/060_ohlcv_rollups.sql) against the candles of the spec (docs/API.md
 * §4) computed from the raw ticks by the engine, at 500 random queries. The ticks reach the rollups
 * the ways a real archive's do: a part written before migration 060 (its history, which 060 copies
 * in), then the rest in batches that each hold a random share of every bucket, in shuffled order,
 * as imports of earlier hours and recordings of the same hours interleave: so a bucket's rows sit in
 * several parts, its first and last tick often in a later part than the rest, and equal timestamps
 * are told apart by seq (arrival order) alone.
 */
const ASSETS = ['880001', '880002'];
const START = Date.UTC(2026, 2, 30, 21, 7, 3, 250);
const SPAN = 9 * 86_400_000;
const TICKS_PER_ASSET = 12_000;
const POINTS = 500;

const STEP: Record<Resolution, number> = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '1h': 3_600_000, '4h': 14_400_000, '1d': 86_400_000 };
const UNIT: Record<Resolution, string> = {
  '1m': 'INTERVAL 1 MINUTE',
  '5m': 'INTERVAL 5 MINUTE',
  '15m': 'INTERVAL 15 MINUTE',
  '1h': 'INTERVAL 1 HOUR',
  '4h': 'INTERVAL 4 HOUR',
  '1d': 'INTERVAL 1 DAY',
};

/**
 * The candles of docs/API.md §4 from raw ticks: price_change ticks of the buckets whose start is in
 * [from, to]; open/close the best_bid of the first/last by (t, seq); the first or last `limit`
 * buckets, ascending. (The query /v1/ohlcv ran before the rollups existed, as a naive service would.)
 */
function referenceSql(resolution: Resolution, take: 'first' | 'last'): string {
  return `SELECT toUnixTimestamp(toStartOfInterval(t, ${UNIT[resolution]}, 'UTC')) * 1000 AS timestamp,
  argMin(best_bid, (t, seq)) AS open, max(best_bid) AS high, min(best_bid) AS low, argMax(best_bid, (t, seq)) AS close, count() AS volume
FROM ticks
WHERE asset_id = {asset_id:String} AND event = 'price_change'
  AND t >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND t < fromUnixTimestamp64Milli({end:Int64}, 'UTC')
GROUP BY timestamp
ORDER BY timestamp ${take === 'first' ? 'ASC' : 'DESC'}
LIMIT {limit:UInt32}`;
}

async function reference(te: TestEngine, q: CandleQuery): Promise<Candle[]> {
  const rows = await te.engine.rows<Candle>(referenceSql(q.resolution, q.take), {
    params: { asset_id: q.asset_id, from: q.from, end: q.to + STEP[q.resolution], limit: q.limit },
  });
  return q.take === 'first' ? rows : rows.reverse();
}

interface Tick {
  asset_id: string;
  t: number;
  seq: number;
  event: 'price_change' | 'last_trade_price' | 'book';
  best_bid: number;
}

/** Runs of equal timestamps (seq the only order within), bursts and quiet hours, a few kinds of event. */
function generateTicks(): Tick[] {
  const rnd = prng(39);
  const ticks: Tick[] = [];
  for (const asset_id of ASSETS) {
    let t = START;
    let bid = 0.5;
    for (let seq = 0; seq < TICKS_PER_ASSET; seq++) {
      const r = rnd();
      // Most gaps 0-2 s, some 0 (equal t), a few of hours (empty buckets at every resolution).
      if (r < 0.3) t += 0;
      else if (r < 0.995) t += Math.floor(rnd() * 120_000);
      else t += Math.floor(rnd() * 30 * 3_600_000);
      if (t >= START + SPAN) break;
      bid = Math.min(0.99, Math.max(0.01, Math.round((bid + (rnd() - 0.5) * 0.04) * 100) / 100));
      const e = rnd();
      ticks.push({ asset_id, t, seq, event: e < 0.85 ? 'price_change' : e < 0.95 ? 'last_trade_price' : 'book', best_bid: bid });
    }
  }
  return ticks;
}

const tickLine = (k: Tick) =>
  JSON.stringify({
    asset_id: k.asset_id,
    t: new Date(k.t).toISOString().replace('T', ' ').replace('Z', ''),
    seq: k.seq,
    event: k.event,
    side: 'YES',
    best_bid: k.best_bid,
    best_ask: Math.min(1, k.best_bid + 0.01),
    price: k.best_bid,
    size: 5,
    market: '0xfeed',
  });

let te: TestEngine;
let ticks: Tick[];
let migrationsDir: string;

beforeAll(async () => {
  te = await createTestEngine();
  ticks = generateTicks();
  const rnd = prng(3939);
  // A third of the ticks (random ones, across all buckets) as the history migration 060 finds. The
  // engine is migrated through 060 already, so that history is written, the rollups its views filled
  // are emptied, and 060 is run again as a migration runs (its emptiness guard lets it copy).
  const isEarly = new Set(ticks.filter(() => rnd() < 1 / 3));
  const early = ticks.filter((k) => isEarly.has(k));
  const late = ticks.filter((k) => !isEarly.has(k));
  // No background merge: every read below must merge a bucket's rows from several parts itself.
  for (const table of ['ohlcv_1m', 'ohlcv_1h', 'ohlcv_1d']) await te.engine.command(`SYSTEM STOP MERGES ${table}`);
  await te.engine.insertJsonEachRow('ticks', early.map(tickLine).join('\n'), { insert_deduplicate: 0 });
  for (const table of ['ohlcv_1m', 'ohlcv_1h', 'ohlcv_1d']) await te.engine.command(`TRUNCATE TABLE ${table}`);
  migrationsDir = mkdtempSync(join(tmpdir(), 'ohlcv-migration-'));
  for (const f of readdirSync(new URL('../clickhouse', import.meta.url))) {
    if (f.startsWith('060_')) cpSync(new URL(`../clickhouse/${f}`, import.meta.url), join(migrationsDir, f));
  }
  await te.engine.command('ALTER TABLE schema_migrations DELETE WHERE version = 60 SETTINGS mutations_sync = 1');
  expect(await runMigrations(te.engine, migrationsDir)).toEqual(['060_ohlcv_rollups.sql']);
  // The rest in 8 batches, each a random share of every bucket, inserted in shuffled order.
  const batches: Tick[][] = Array.from({ length: 8 }, () => []);
  for (const k of late) batches[Math.floor(rnd() * batches.length)].push(k);
  batches.sort(() => rnd() - 0.5);
  for (const batch of batches) await te.engine.insertJsonEachRow('ticks', batch.map(tickLine).join('\n'), { insert_deduplicate: 0 });
}, 120_000);

afterAll(async () => {
  await te?.close();
  if (migrationsDir) rmSync(migrationsDir, { recursive: true, force: true });
});

describe('candle rollups', () => {
  it('hold every bucket in several parts: the read merges rows that are still apart', async () => {
    const [r] = await te.engine.rows<{ rows: number; buckets: number }>(`SELECT count() AS rows, uniqExact(asset_id, bucket) AS buckets FROM ohlcv_1h`);
    expect(r.rows).toBeGreaterThan(r.buckets * 2);
  });

  it('count a retried insert once: the ingest writer’s deduplicated batch is dropped by every rollup, hours and days included', async () => {
    const asset_id = '880009';
    const batch = ticks.filter((k) => k.asset_id === ASSETS[0]).map((k) => ({ ...k, asset_id }));
    const body = batch.map(tickLine).join('\n');
    // The settings src/ingest/writer.ts inserts ticks with.
    const settings = { insert_deduplication_token: 'retry-test-1', deduplicate_blocks_in_dependent_materialized_views: 1, parallel_view_processing: 1 };
    const volumes = async () =>
      te.engine.rows<{ m: number; h: number; d: number }>(
        `SELECT (SELECT sum(volume) FROM ohlcv_1m WHERE asset_id = {a:String}) AS m, (SELECT sum(volume) FROM ohlcv_1h WHERE asset_id = {a:String}) AS h,
          (SELECT sum(volume) FROM ohlcv_1d WHERE asset_id = {a:String}) AS d`,
        { params: { a: asset_id } },
      );
    const changes = batch.filter((k) => k.event === 'price_change').length;
    await te.engine.insertJsonEachRow('ticks', body, settings);
    expect(await volumes()).toEqual([{ m: changes, h: changes, d: changes }]);
    await te.engine.insertJsonEachRow('ticks', body, settings);
    expect(await volumes()).toEqual([{ m: changes, h: changes, d: changes }]);
  });

  it(`answer ${POINTS} random queries exactly as the candles computed from raw ticks`, async () => {
    const rnd = prng(500);
    const resolutions = Object.keys(STEP) as Resolution[];
    let candles = 0;
    for (let i = 0; i < POINTS; i++) {
      const resolution = resolutions[Math.floor(rnd() * resolutions.length)];
      const step = STEP[resolution];
      const a = START - 86_400_000 + Math.floor(rnd() * (SPAN + 2 * 86_400_000));
      const b = a + Math.floor(rnd() ** 2 * SPAN);
      const q: CandleQuery = {
        asset_id: ASSETS[i % ASSETS.length],
        resolution,
        from: Math.floor(a / step) * step,
        to: Math.floor(b / step) * step,
        limit: 1 + Math.floor(rnd() ** 2 * 1000),
        take: rnd() < 0.5 ? 'first' : 'last',
      };
      const want = await reference(te, q);
      expect(await queryCandles(te.engine, q), JSON.stringify(q)).toEqual(want);
      candles += want.length;
    }
    // The points asked for real answers, not empty ones.
    expect(candles).toBeGreaterThan(POINTS * 20);
  });
});
