import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEngine } from '../src/clickhouse/embedded.js';
import type { Engine } from '../src/clickhouse/engine.js';
import { loadMigrations, MIGRATIONS_DIR, runMigrations } from '../src/clickhouse/migrations.js';
import { type Candle, queryCandles, type Resolution } from '../src/queries/ohlcv.js';

/**
 * Migration 042 on a store that already holds ticks: the candle rollups are rebuilt from ticks with open
 * and close keyed by (t, seq), and every candle is what the ticks say (a reference computed here from the
 * spec, docs/API.md /v1/ohlcv: open/close the best_bid of the first/last price_change by time, then
 * arrival order), before the migration, after it, after a re-run of it, and for ticks stored after it.
 */
const H = Date.UTC(2026, 5, 1, 10);
const ASSET = '11';
let dir: string;
let early: string;
let engine: Engine;

interface Tick {
  t: number;
  seq: number;
  event: 'price_change' | 'book';
  best_bid: number;
}

// Inserted in this order, in three inserts: later ticks first, equal times told apart by seq only,
// prices whose Float64 bits order differently from their values (0.1 vs 0.7), and books (not candles).
const BATCHES: Tick[][] = [
  [
    { t: H + 90_000, seq: 7, event: 'price_change', best_bid: 0.31 },
    { t: H + 30_000, seq: 5, event: 'price_change', best_bid: 0.7 },
    { t: H + 30_000, seq: 4, event: 'price_change', best_bid: 0.1 },
    { t: H + 10_000, seq: 9, event: 'book', best_bid: 0.99 },
  ],
  [
    { t: H + 59_999, seq: 2, event: 'price_change', best_bid: 0.45 },
    { t: H + 30_000, seq: 6, event: 'price_change', best_bid: 0.2 },
    { t: H + 3_600_000 + 1, seq: 1, event: 'price_change', best_bid: 0.55 },
  ],
  [{ t: H + 61_000, seq: 3, event: 'price_change', best_bid: 0.3 }],
];
const LATER: Tick[] = [
  { t: H + 30_000, seq: 3, event: 'price_change', best_bid: 0.62 },
  { t: H + 3_600_000 + 1, seq: 2, event: 'price_change', best_bid: 0.05 },
  // A bucket of its own, both in one insert block: its open and close come from the view alone.
  { t: H + 7_200_000 + 20, seq: 1, event: 'price_change', best_bid: 0.6 },
  { t: H + 7_200_000 + 10, seq: 8, event: 'price_change', best_bid: 0.4 },
];

/** Candles of `ticks` at a bucket width (ms), from the spec. */
function reference(ticks: Tick[], width: number): Candle[] {
  const buckets = new Map<number, Tick[]>();
  for (const x of ticks.filter((x) => x.event === 'price_change')) {
    const b = Math.floor(x.t / width) * width;
    buckets.set(b, [...(buckets.get(b) ?? []), x]);
  }
  return [...buckets]
    .sort(([a], [b]) => a - b)
    .map(([timestamp, xs]) => {
      const ordered = [...xs].sort((a, b) => a.t - b.t || a.seq - b.seq);
      const bids = xs.map((x) => x.best_bid);
      return {
        timestamp,
        open: ordered[0].best_bid,
        high: Math.max(...bids),
        low: Math.min(...bids),
        close: ordered.at(-1)!.best_bid,
        volume: xs.length,
      };
    });
}

const WIDTHS: [Resolution, number][] = [
  ['1m', 60_000],
  ['1h', 3_600_000],
];

async function candles(resolution: Resolution): Promise<Candle[]> {
  const rows = await queryCandles(engine, { asset_id: ASSET, resolution, from: H - 86_400_000, to: H + 86_400_000, limit: 1000, take: 'first' });
  return rows.map((r) => ({ ...r, timestamp: Number(r.timestamp), volume: Number(r.volume) }));
}

async function insert(ticks: Tick[]): Promise<void> {
  const line = (x: Tick) =>
    JSON.stringify({ asset_id: ASSET, ...x, side: 'YES', best_ask: 0.99, price: 0.5, size: 1, book_side: x.event === 'book' ? '' : 'BUY', market: '0xm' });
  await engine.insertJsonEachRow('ticks', ticks.map(line).join('\n'));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-candles-migration-'));
  early = mkdtempSync(join(tmpdir(), 'tickhouse-migrations-041-'));
  for (const file of readdirSync(MIGRATIONS_DIR).filter((f) => f < '042')) copyFileSync(join(MIGRATIONS_DIR, file), join(early, file));
  engine = EmbeddedEngine.open(dir, 2);
});

afterAll(async () => {
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(early, { recursive: true, force: true });
});

describe('migration 042 over existing ticks', () => {
  it('rebuilds candles_1m and candles_1h from ticks: every candle as the ticks say, again after a re-run and for later ticks', async () => {
    await runMigrations(engine, early);
    for (const batch of BATCHES) await insert(batch);
    const stored = BATCHES.flat();
    // Before 042 (argMin/argMax states), read as the reader of that time did.
    const old = await engine.rows<{ b: number; o: number; c: number; v: number }>(
      `SELECT toUnixTimestamp(bucket) * 1000 AS b, argMinMerge(open) AS o, argMaxMerge(close) AS c, sum(volume) AS v
       FROM candles_1m GROUP BY bucket ORDER BY b`,
    );
    expect(old.map((r) => ({ timestamp: Number(r.b), open: r.o, close: r.c, volume: Number(r.v) }))).toEqual(
      reference(stored, 60_000).map(({ timestamp, open, close, volume }) => ({ timestamp, open, close, volume })),
    );

    expect(await runMigrations(engine)).toContain('042_candles_keyed.sql');
    for (const [resolution, width] of WIDTHS) expect(await candles(resolution), resolution).toEqual(reference(stored, width));

    // A migration cut short is re-run whole: it starts over from its DROPs and counts nothing twice.
    for (const statement of loadMigrations().find((m) => m.version === 42)!.statements) await engine.command(statement);
    for (const [resolution, width] of WIDTHS) expect(await candles(resolution), resolution).toEqual(reference(stored, width));

    // Ticks stored after it reach the new tables through the views.
    await insert(LATER);
    for (const [resolution, width] of WIDTHS) expect(await candles(resolution), resolution).toEqual(reference([...stored, ...LATER], width));
  });
});
