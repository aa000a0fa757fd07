import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEngine } from '../src/clickhouse/embedded.js';
import type { Engine } from '../src/clickhouse/engine.js';
import { loadMigrations, MIGRATIONS_DIR, runMigrations } from '../src/clickhouse/migrations.js';

/**
 * Migration 008 on a store that already holds data: its exchange books become unchecked book_checks
 * rows and its ticks are counted in ticks_1d; running it again adds nothing.
 */
const D1 = Date.UTC(2026, 5, 1);
let dir: string;
let early: string;
let engine: Engine;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-migration-'));
  early = mkdtempSync(join(tmpdir(), 'tickhouse-migrations-007-'));
  for (const file of readdirSync(MIGRATIONS_DIR).filter((f) => f < '008')) copyFileSync(join(MIGRATIONS_DIR, file), join(early, file));
  engine = EmbeddedEngine.open(dir, 2);
});

afterAll(async () => {
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(early, { recursive: true, force: true });
});

describe('migration 008 over existing data', () => {
  it('backfills book_checks (unchecked) and ticks_1d once', async () => {
    await runMigrations(engine, early);
    // Rows as the ingest stored them before 008: two exchange books, a checkpoint, and their ticks.
    const tick = (t: number, seq: number, event: string) =>
      JSON.stringify({ asset_id: '11', t, seq, event, side: 'YES', best_bid: 0.4, best_ask: 0.6, price: 0, size: 0, book_side: '', market: '0xm' });
    const snapshot = (t: number, seq: number, is_checkpoint: number) =>
      JSON.stringify({ asset_id: '11', t, seq, is_checkpoint, market: '0xm', bids: [{ price: 0.4, size: 1 }], asks: [{ price: 0.6, size: 1 }] });
    await engine.insertJsonEachRow('ticks', [tick(D1 + 1000, 1, 'book'), tick(D1 + 2000, 2, 'price_change'), tick(D1 + 86_400_000 + 5, 3, 'book')].join('\n'));
    await engine.insertJsonEachRow('book_snapshots', [snapshot(D1 + 1000, 1, 0), snapshot(D1 + 2000, 2, 1), snapshot(D1 + 86_400_000 + 5, 3, 0)].join('\n'));
    // Later migrations run too; 008 and the two after it are what this store lacked first.
    expect((await runMigrations(engine)).slice(0, 3)).toEqual(['008_coverage.sql', '009_market_trading_rules.sql', '010_book_writes.sql']);
    const checks = () =>
      engine.rows(
        `SELECT asset_id, toUnixTimestamp64Milli(t) AS ms, toString(verdict) AS verdict,` +
          ` levels_differing FROM book_checks ORDER BY t SETTINGS output_format_json_quote_64bit_integers = 0`,
      );
    const days = () =>
      engine.rows(
        `SELECT asset_id, toString(day) AS day, sum(ticks) AS ticks FROM ticks_1d GROUP BY asset_id,` +
          ` day ORDER BY day SETTINGS output_format_json_quote_64bit_integers = 0`,
      );
    expect(await checks()).toEqual([
      { asset_id: '11', ms: D1 + 1000, verdict: 'unchecked', levels_differing: 0 },
      { asset_id: '11', ms: D1 + 86_400_000 + 5, verdict: 'unchecked', levels_differing: 0 },
    ]);
    expect(await days()).toEqual([
      { asset_id: '11', day: '2026-06-01', ticks: 2 },
      { asset_id: '11', day: '2026-06-02', ticks: 1 },
    ]);
    // A migration cut short is re-run whole: the guards keep it from counting the history twice.
    for (const statement of loadMigrations().find((m) => m.version === 8)!.statements) await engine.command(statement);
    expect((await checks()).length).toBe(2);
    expect(await days()).toEqual([
      { asset_id: '11', day: '2026-06-01', ticks: 2 },
      { asset_id: '11', day: '2026-06-02', ticks: 1 },
    ]);
  });
});
