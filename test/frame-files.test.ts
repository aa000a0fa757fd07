import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/clickhouse/engine.js';
import { loadMigrations } from '../src/clickhouse/migrations.js';
import { type ReplayProgress, replayFile, replayLines } from '../src/ingest/frame-files.js';
import { BatchWriter } from '../src/ingest/writer.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { fixturePath } from './support/fixtures.js';

const FRAMES = fixturePath('polymarket/ws-frames.jsonl');
const GAMMA = fixturePath('polymarket/gamma-markets.json');

let te: TestEngine;
let engine: Engine;
let dir: string;

beforeAll(async () => {
  te = await createTestEngine();
  engine = te.engine;
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-replay-'));
});

afterAll(async () => {
  await te?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function counts() {
  const [row] = await engine.rows<Record<string, string | number>>(`
    SELECT
      (SELECT count() FROM ticks) AS ticks,
      (SELECT count() FROM book_snapshots) AS book_snapshots,
      (SELECT count() FROM markets) AS markets,
      (SELECT count() FROM market_events) AS market_events,
      (SELECT uniqExact(asset_id, bucket) FROM ohlcv_1m) AS candles,
      (SELECT sum(volume) FROM ohlcv_1m) AS candle_volume,
      (SELECT uniqExact(asset_id) FROM asset_stats) AS stat_assets,
      (SELECT sum(total_ticks) FROM asset_stats) AS stat_ticks,
      (SELECT sum(price_change_ticks) FROM asset_stats) AS stat_price_changes,
      (SELECT sum(ticks) FROM activity_1m) AS activity,
      (SELECT countIf(kind = 'price_change') FROM book_events) AS book_event_changes,
      (SELECT countIf(kind != 'price_change') FROM book_events) AS book_event_snapshots`);
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)]));
}

describe('replaying the sample capture', () => {
  it('writes the rows docs/INGEST.md §2 derives, into every table', async () => {
    const summary = await replayFile(engine, FRAMES, { marketsFile: GAMMA });
    expect(summary.writer.rows).toEqual({ ticks: 10, book_snapshots: 4, markets: 4, book_checks: 4, capture_events: 0, market_events: 6 });
    expect(summary.normalizer.ticks).toBe(10);
    expect(summary.normalizer.marketEvents).toBe(6);
    expect(summary.normalizer.malformed).toBe(0);
    expect(summary.sourceId).toMatch(/^file-[0-9a-f]{16}$/);
    expect(await counts()).toEqual({
      ticks: 10,
      book_snapshots: 4,
      markets: 4,
      // new_market and market_resolved name 2 assets each, best_bid_ask and tick_size_change one
      market_events: 6,
      // price_change ticks: A and B (same minute, different assets), E twice (different minutes), F
      candles: 5,
      candle_volume: 5,
      stat_assets: 6,
      stat_ticks: 10,
      stat_price_changes: 5,
      activity: 10,
      book_event_changes: 5,
      book_event_snapshots: 4,
    });
  });

  it('stores values that read back exactly', async () => {
    const ticks = await engine.rows(
      `SELECT toUnixTimestamp64Milli(t) AS t, event, side, best_bid, best_ask, price, size FROM ticks
       WHERE asset_id = {a:String} ORDER BY t, seq`,
      { params: { a: '71321045679252212594626385532706912750332728571942532289631379312455583992563' } },
    );
    expect(ticks.map((r) => ({ ...r, t: Number(r.t) }))).toEqual([
      { t: 1729084877448, event: 'price_change', side: 'UNKNOWN', best_bid: 0.5, best_ask: 0.4, price: 0.4, size: 3300 },
      { t: 1757908892351, event: 'price_change', side: 'UNKNOWN', best_bid: 0.5, best_ask: 1, price: 0.5, size: 200 },
    ]);
    const [book] = await engine.rows<{ bids: { price: number; size: number }[]; asks: unknown[]; is_checkpoint: number }>(
      `SELECT bids, asks, is_checkpoint FROM book_snapshots WHERE asset_id = {a:String}`,
      { params: { a: '350977769852917329387037893294763093471844346281449484439085576212613048126' } },
    );
    expect(book.is_checkpoint).toBe(0);
    expect(book.bids.map((l) => [l.price, l.size])).toEqual([
      [0.07, 182528.55],
      [0.06, 219685.67],
      [0.05, 507106.18],
      [0.04, 171213.7],
      [0.03, 37268.67],
      [0.02, 70281.2],
      [0.01, 3149725.72],
    ]);
    expect(book.asks).toHaveLength(57);
    const markets = await engine.rows(
      `SELECT outcome, toUnixTimestamp64Milli(updated_at) AS updated_at FROM markets FINAL WHERE market = {m:String} ORDER BY outcome DESC`,
      {
        params: { m: '0x311d0c4b6671ab54af4970c06fcf58662516f5168997bdda209ec3db5aa6b0c1' },
      },
    );
    expect(markets.map((r) => [r.outcome, Number(r.updated_at)])).toEqual([
      ['Yes', 1766790415550],
      ['No', 1766790415550],
    ]);
  });

  it('replayed again, changes no table', async () => {
    const before = await counts();
    const summary = await replayFile(engine, FRAMES, { marketsFile: GAMMA });
    expect(summary.normalizer.ticks).toBe(10);
    // Identical market versions are not sent again; ticks and snapshots are sent and dropped by the engine.
    expect(summary.writer.rows.markets).toBe(0);
    expect(await counts()).toEqual(before);
  });

  it('reads the same file gzip-compressed, by extension or by magic bytes, as the same source', async () => {
    const before = await counts();
    const gz = join(dir, 'frames.jsonl.gz');
    writeFileSync(gz, gzipSync(readFileSync(FRAMES)));
    const plain = await replayFile(engine, FRAMES);
    const compressed = await replayFile(engine, gz);
    expect(compressed.sourceId).toBe(plain.sourceId);
    expect(compressed.normalizer).toEqual(plain.normalizer);
    expect(await counts()).toEqual(before);

    const other = join(dir, 'other-frames.bin');
    const lines = [
      JSON.stringify([
        {
          event_type: 'book',
          asset_id: 'gz-asset',
          market: '0xgz',
          timestamp: '1700000000000',
          bids: [{ price: '0.4', size: '10' }],
          asks: [{ price: '0.6', size: '10' }],
        },
      ]),
      JSON.stringify({
        event_type: 'price_change',
        market: '0xgz',
        timestamp: '1700000001000',
        price_changes: [{ asset_id: 'gz-asset', price: '0.45', size: '5', side: 'BUY' }],
      }),
      'PONG',
      JSON.stringify({
        event_type: 'last_trade_price',
        asset_id: 'gz-asset',
        market: '0xgz',
        price: '0.6',
        size: '2',
        side: 'BUY',
        timestamp: '1700000002000',
      }),
    ];
    writeFileSync(other, gzipSync(`${lines.join('\r\n')}\r\n`));
    const summary = await replayFile(engine, other);
    expect(summary.normalizer.pongs).toBe(1);
    expect(summary.writer.rows).toEqual({ ticks: 3, book_snapshots: 1, markets: 0, book_checks: 1, capture_events: 0, market_events: 0 });
    const ticks = await engine.rows(`SELECT event, best_bid, best_ask FROM ticks WHERE asset_id = 'gz-asset' ORDER BY t, seq`);
    expect(ticks).toEqual([
      { event: 'book', best_bid: 0.4, best_ask: 0.6 },
      { event: 'price_change', best_bid: 0.45, best_ask: 0.6 },
      { event: 'last_trade_price', best_bid: 0.45, best_ask: 0.6 },
    ]);
  });
});

describe('replayLines', () => {
  /** 3 000 lines over 5 assets: a book each, then price changes that cross minutes. */
  function generated(): string[] {
    const lines: string[] = [];
    const t0 = Date.UTC(2025, 0, 1);
    for (let a = 0; a < 5; a++) {
      lines.push(
        JSON.stringify({
          event_type: 'book',
          asset_id: `gen-${a}`,
          market: '0xgen',
          timestamp: String(t0),
          bids: [{ price: '0.4', size: '1' }],
          asks: [{ price: '0.6', size: '1' }],
        }),
      );
    }
    for (let i = 0; i < 2995; i++) {
      const side = i % 2 === 0 ? 'BUY' : 'SELL';
      const price = side === 'BUY' ? (0.3 + (i % 10) / 100).toFixed(2) : (0.61 + (i % 10) / 100).toFixed(2);
      lines.push(
        JSON.stringify({
          event_type: 'price_change',
          market: '0xgen',
          timestamp: String(t0 + i * 1000),
          price_changes: [{ asset_id: `gen-${i % 5}`, price, size: String(i % 7), side }],
        }),
      );
    }
    return lines;
  }

  it('cuts batches at the row bound and re-running them changes nothing', async () => {
    const before = await counts();
    const progress: ReplayProgress[] = [];
    const first = await replayLines(engine, generated(), { sourceId: 'gen-test', batchRows: 250, onProgress: (p) => progress.push(p), progressEveryMs: 0 });
    expect(first.writer.rows.ticks).toBe(3000);
    expect(first.writer.batches.ticks).toBe(12);
    expect(progress.map((p) => p.lines)).toEqual([1024, 2048]);
    // Each asset gets 599 changes within 50 minutes of its book: the hourly bound never comes first, the
    // 200-change bound does at its 200th and 400th change → 2 checkpoints per asset.
    expect(first.normalizer.checkpoints).toBe(5 * 2);
    const after = await counts();
    expect(after.ticks - before.ticks).toBe(3000);
    expect(after.book_snapshots - before.book_snapshots).toBe(5 + first.normalizer.checkpoints);
    expect(after.candle_volume - before.candle_volume).toBe(2995);
    expect(after.stat_ticks - before.stat_ticks).toBe(3000);
    expect(after.book_event_changes - before.book_event_changes).toBe(2995);
    expect(after.book_event_snapshots - before.book_event_snapshots).toBe(after.book_snapshots - before.book_snapshots);

    const second = await replayLines(engine, generated(), { sourceId: 'gen-test', batchRows: 250 });
    expect(second.writer.batches.ticks).toBe(12);
    expect(await counts()).toEqual(after);
  });

  it('writes batches larger than one 4 MiB buffer chunk, with non-ASCII labels intact', async () => {
    const t0 = Date.UTC(2025, 1, 1);
    const lines = [
      JSON.stringify({
        event_type: 'new_market',
        market: '0xutf',
        question: '¿Llueve mañana? 雨',
        slug: 'lluvia',
        assets_ids: ['utf-si', 'utf-no'],
        outcomes: ['Sí', 'Nö'],
        timestamp: String(t0),
      }),
      ...Array.from({ length: 40_000 }, (_, i) =>
        JSON.stringify({
          event_type: 'last_trade_price',
          asset_id: i % 2 ? 'utf-no' : 'utf-si',
          market: '0xutf',
          price: '0.5',
          size: String(i + 1),
          side: 'BUY',
          timestamp: String(t0 + i),
        }),
      ),
    ];
    const summary = await replayLines(engine, lines, { sourceId: 'utf-test' });
    expect(summary.writer.batches.ticks).toBe(1);
    const rows = await engine.rows(`SELECT side, count() AS n, sum(size) AS volume FROM ticks WHERE market = '0xutf' GROUP BY side ORDER BY side`);
    expect(rows.map((r) => [r.side, Number(r.n), Number(r.volume)])).toEqual([
      // ~165 bytes a row: 6.6 MB in one batch
      ['NÖ', 20_000, 400_020_000],
      ['SÍ', 20_000, 400_000_000],
    ]);
    const [market] = await engine.rows(`SELECT question, outcome FROM markets WHERE asset_id = 'utf-si'`);
    expect(market).toEqual({ question: '¿Llueve mañana? 雨', outcome: 'Sí' });
  });

  it('stores tick times exactly whatever their digits (the engine reads a bare number in text by its length)', async () => {
    // ms and µs at the edges of the engine's text heuristics: 4 digits (a year), 5 (seconds), 10 (seconds), 13 (ms).
    const times = [0, 5, 999, 2000, 99_999, 1_788_264_000, 1_788_264_000_123, 4_102_444_800_000];
    const writer = new BatchWriter(engine, { sourceId: 'times-test' });
    times.forEach((t, i) =>
      writer.tick({
        asset_id: 'times-a',
        t,
        seq: i,
        event: 'last_trade_price',
        side: 'BUY',
        best_bid: 0,
        best_ask: 0,
        price: 0.5,
        size: 1,
        book_side: 'BUY',
        market: '0xtimes',
        ...(i % 2 ? { local_t: t * 1000 + 7 } : {}),
      }),
    );
    await writer.flush();
    const rows = await engine.rows<{ t: string; local_t: string }>(
      `SELECT toString(toUnixTimestamp64Milli(t)) AS t, toString(toUnixTimestamp64Micro(local_t)) AS local_t
       FROM ticks WHERE asset_id = 'times-a' ORDER BY seq`,
    );
    expect(rows.map((r) => [Number(r.t), Number(r.local_t)])).toEqual(times.map((t, i) => [t, i % 2 ? t * 1000 + 7 : t * 1000]));
  });

  it('migration 007 copies existing changes and snapshots into book_events exactly as its views do', async () => {
    const contents = () =>
      engine.rows(
        `SELECT asset_id, toUnixTimestamp64Milli(t) AS t, seq, kind, market, price, size, book_side, bids, asks
         FROM book_events ORDER BY asset_id, t, seq, kind SETTINGS output_format_json_quote_64bit_integers = 0`,
      );
    const byViews = await contents();
    expect(byViews.length).toBeGreaterThan(3000);
    const backfill = loadMigrations()
      .find((m) => m.name === '007_book_events.sql')!
      .statements.filter((sql) => sql.startsWith('INSERT INTO book_events'));
    expect(backfill).toHaveLength(2);
    await engine.command('TRUNCATE TABLE book_events');
    for (const sql of backfill) await engine.command(sql);
    expect(await contents()).toEqual(byViews);
  });
});
