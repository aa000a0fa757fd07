import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../src/clickhouse/embedded.js';
import { runMigrations } from '../../src/clickhouse/migrations.js';
import { generateDemo } from '../../src/demo/frames.js';
import { replayFile } from '../../src/ingest/frame-files.js';
import { setLogLevel } from '../../src/log.js';

/**
 * The child side of the ingest bench (scripts/bench/ingest.ts): `ingest-run.ts <ticks> <prefixed>`.
 * Writes the demo frames to a file, replays it into a fresh engine, then inserts the stored tick rows
 * again as raw JSONEachRow; prints one JSON line.
 */
const [ticksArg, prefixedArg] = process.argv.slice(2);
setLogLevel('error');
const dir = mkdtempSync(join(tmpdir(), 'tickhouse-bench-ingest-'));
const engine = EmbeddedEngine.open(join(dir, 'engine'), 4);
try {
  await runMigrations(engine);
  const demo = generateDemo({ seed: 11, ticks: Number(ticksArg), endMs: Date.UTC(2026, 8, 1) });
  const file = join(dir, 'frames.jsonl');
  const out = createWriteStream(file);
  let lines = 0;
  for (const frame of demo.frames()) {
    const line = prefixedArg === 'true' ? `${receivePrefix(lines)}${frame}\n` : `${frame}\n`;
    lines++;
    if (!out.write(line)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));

  const started = performance.now();
  const summary = await replayFile(engine, file);
  const seconds = (performance.now() - started) / 1000;
  const rows = Object.values(summary.writer.rows).reduce((a, b) => a + b, 0);

  // Baseline: the same tick rows (seq shifted so deduplication does not drop them), serialized
  // beforehand, inserted by the engine alone in batches of the writer's default size.
  const text = (
    await engine.rows<{ line: string }>(
      "SELECT formatRow('JSONEachRow', asset_id, t, seq + 1 AS seq, event, side, best_bid, best_ask, price, size, market) AS line FROM ticks ORDER BY " +
        'asset_id, t, seq',
    )
  ).map((r) => r.line.trimEnd());
  const rawStarted = performance.now();
  for (let i = 0; i < text.length; i += 50_000) {
    await engine.insertJsonEachRow('ticks', text.slice(i, i + 50_000).join('\n'), { deduplicate_blocks_in_dependent_materialized_views: 1 });
  }
  const rawSeconds = (performance.now() - rawStarted) / 1000;
  process.stdout.write(`${JSON.stringify({ seconds, lines, ticks: summary.writer.rows.ticks, rows, rawSeconds, rawTicks: text.length })}\n`);
} finally {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}

/** A receive time 1.5 ms after line `i`'s place in a made-up clock, as the archive writes it. */
function receivePrefix(i: number): string {
  const us = Date.UTC(2026, 8, 1) * 1000 + i * 1500;
  return `${new Date(Math.floor(us / 1000)).toISOString().slice(0, 19)}.${String(us % 1_000_000).padStart(6, '0')}0Z `;
}
