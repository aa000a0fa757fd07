import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../src/clickhouse/embedded.js';
import { runMigrations } from '../../src/clickhouse/migrations.js';
import { generateDemo } from '../../src/demo/frames.js';
import { replayFile } from '../../src/ingest/frame-files.js';
import { receiveTimePrefix } from '../../src/ingest/receive-time.js';
import { setLogLevel } from '../../src/log.js';
import { rawJsonInsert } from './shared.js';

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
    const line = prefixedArg === 'true' ? `${receiveTimePrefix(Date.UTC(2026, 8, 1) * 1000 + lines * 1500)}${frame}\n` : `${frame}\n`;
    lines++;
    if (!out.write(line)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));

  const started = performance.now();
  const summary = await replayFile(engine, file);
  const seconds = (performance.now() - started) / 1000;
  const rows = Object.values(summary.writer.rows).reduce((a, b) => a + b, 0);

  // Baseline: the same tick rows inserted by the engine alone, as JSON, in batches of the same size.
  const { rawSeconds, rawTicks } = await rawJsonInsert(engine, 50_000);
  process.stdout.write(`${JSON.stringify({ seconds, lines, ticks: summary.writer.rows.ticks, rows, rawSeconds, rawTicks })}\n`);
} finally {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}
