import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARCHIVE_HOUR, type ArchiveHour, ensureArchiveHour } from '../scripts/bench/archive-hour.js';
import { planImport } from '../src/ingest/import/plan.js';
import { runImport } from '../src/ingest/import/run.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { tableHashes } from './support/table-hashes.js';

/**
 * Issue 36's "Must show" (docs/INGEST.md §6.5): importing an archive adds nothing twice, whatever the
 * sequence of runs. `--assets A`, then the whole hour, then the hour again (and with an overlapping
 * --from/--to), then the hour as re-published with rows appended: every table (rollups read merged)
 * hashes as one clean import of the final file. One chDB directory per process: "clean" is the same
 * store with its tables truncated.
 */
let te: TestEngine;
let dir: string;
let first: ArchiveHour;
let grown: ArchiveHour;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-idempotence-'));
  first = await ensureArchiveHour(dir, { rows: 16_000, tokens: 30 });
  grown = await ensureArchiveHour(dir, { rows: 16_000, tokens: 30, append: 600 });
  te = await createTestEngine();
}, 120_000);

afterAll(async () => {
  await te?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function truncateAll(): Promise<void> {
  const tables = await te.engine.rows<{ name: string }>(
    `SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' AND name != 'schema_migrations'`,
  );
  for (const { name } of tables) await te.engine.command(`TRUNCATE TABLE ${name}`);
}

async function rowsPerAsset(path: string): Promise<Map<string, number>> {
  const rows = await te.engine.rows<{ asset_id: string; n: string }>(`SELECT asset_id, count() AS n FROM file({p:String}, Parquet) GROUP BY asset_id`, {
    params: { p: path },
  });
  return new Map(rows.map((r) => [r.asset_id, Number(r.n)]));
}

const importHour = async (path: string, opts: { assets?: Set<string>; from?: number; to?: number } = {}) => {
  const summary = await runImport(te.engine, await planImport('pmxt', [path], { from: opts.from, to: opts.to }), { assets: opts.assets });
  expect(summary.problems).toBe(0);
  return summary;
};

describe('import idempotence', () => {
  it('--assets A, the whole hour, the hour again, the hour grown: every table as one clean import of the grown hour', async () => {
    const before = await rowsPerAsset(first.pmxt);
    const after = await rowsPerAsset(grown.pmxt);
    // A: an asset the re-published hour has more rows of.
    const grew = [...after].filter(([a, n]) => n > (before.get(a) ?? 0)).map(([a]) => a);
    expect(grew.length).toBeGreaterThan(2);
    const A = grew[0];

    const subset = await importHour(first.pmxt, { assets: new Set([A]) });
    expect(subset.events).toBe(before.get(A));
    const whole = await importHour(first.pmxt);
    expect(whole.events).toBe(first.rows - before.get(A)!);
    const again = await importHour(first.pmxt);
    expect(again.skippedUnits).toBe(1);
    const overlapping = await importHour(first.pmxt, { from: ARCHIVE_HOUR - 3_600_000, to: ARCHIVE_HOUR + 7_200_000 });
    expect(overlapping.skippedUnits).toBe(1);
    const appended = await importHour(grown.pmxt);
    expect(appended.events).toBe(grown.rows - first.rows);
    const sequence = await tableHashes(te.engine);

    await truncateAll();
    await importHour(grown.pmxt);
    const clean = await tableHashes(te.engine);
    expect(sequence).toEqual(clean);
    // The grown hour again: nothing to read.
    expect((await importHour(grown.pmxt)).skippedUnits).toBe(1);
    expect(await tableHashes(te.engine)).toEqual(clean);
  }, 600_000);
});
