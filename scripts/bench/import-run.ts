import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { EmbeddedEngine } from '../../src/clickhouse/embedded.js';
import { runMigrations } from '../../src/clickhouse/migrations.js';
import { generateDemo } from '../../src/demo/frames.js';
import { planImport } from '../../src/ingest/import/plan.js';
import { runImport } from '../../src/ingest/import/run.js';
import { receiveTimePrefix } from '../../src/ingest/receive-time.js';
import { setLogLevel } from '../../src/log.js';

/**
 * The child side of the import bench (scripts/bench/import.ts): `import-run.ts <ticks> <frames|tardis>`.
 * frames: the demo frames with receive times, written to a file, imported (`import frames`) into a
 * fresh engine. tardis: the same frames imported, then written out by the engine as one Tardis
 * incremental_book_L2 file and one trades file (all assets, by local_timestamp), imported into the
 * emptied engine; only that import is timed. Then the stored tick rows are inserted again as raw
 * JSONEachRow (the baseline). Prints one JSON line; peak RSS is the whole child's.
 */
const [ticksArg, format] = process.argv.slice(2);
setLogLevel('error');
const dir = mkdtempSync(join(tmpdir(), 'tickhouse-bench-import-'));
const DAY = '2026-09-01';

const engine = EmbeddedEngine.open(join(dir, 'engine'), 4);
await runMigrations(engine);
try {
  const demo = generateDemo({ seed: 11, ticks: Number(ticksArg), endMs: Date.UTC(2026, 8, 1, 23) });
  const frames = join(dir, 'frames.jsonl');
  const out = createWriteStream(frames);
  let lines = 0;
  for (const frame of demo.frames()) {
    const line = `${receiveTimePrefix(Date.UTC(2026, 8, 1) * 1000 + lines * 1500)}${frame}\n`;
    lines++;
    if (!out.write(line)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));

  let file = frames;
  let started = performance.now();
  let summary = await runImport(engine, await planImport('frames', [frames]));
  if (format === 'tardis') {
    const book = join(dir, `polymarket_incremental_book_L2_${DAY}_ALL.csv`);
    const trades = join(dir, `polymarket_trades_${DAY}_ALL.csv`);
    // The engine writes the CSV (JS never touches a row): snapshots' levels, asks then bids, and changes.
    await pipeline(
      engine.stream(
        `SELECT line FROM (
           SELECT concat('polymarket,', asset_id, ',', toString(toUnixTimestamp64Milli(t) * 1000), ',', toString(toUnixTimestamp64Micro(local_t)), ',true,',
                         l.1, ',', toString(l.2), ',', toString(l.3)) AS line, local_t AS lt, seq, n
           FROM (SELECT *, arrayConcat(arrayMap(x -> ('ask', x.1, x.2), asks), arrayMap(x -> ('bid', x.1, x.2), bids)) AS levels
                 FROM book_snapshots WHERE is_checkpoint = 0)
           ARRAY JOIN levels AS l, arrayEnumerate(levels) AS n
           UNION ALL
           SELECT concat('polymarket,', asset_id, ',', toString(toUnixTimestamp64Milli(t) * 1000), ',', toString(toUnixTimestamp64Micro(local_t)), ',false,',
                         if(book_side = 'BUY', 'bid', 'ask'), ',', toString(price), ',', toString(size)), local_t, seq, 0
           FROM ticks WHERE event = 'price_change')
         ORDER BY lt, seq, n`,
        'TSVRaw',
      ),
      createWriteStream(book),
    );
    await pipeline(
      engine.stream(
        `SELECT concat('polymarket,', asset_id, ',', toString(toUnixTimestamp64Milli(t) * 1000), ',', toString(toUnixTimestamp64Micro(local_t)), ',,',
                       lower(toString(book_side)), ',', toString(price), ',', toString(size))
         FROM ticks WHERE event = 'last_trade_price' ORDER BY local_t, seq`,
        'TSVRaw',
      ),
      createWriteStream(trades),
    );
    await prepend(book, 'exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount');
    await prepend(trades, 'exchange,symbol,timestamp,local_timestamp,id,side,price,amount');
    // One chDB directory per process: the store is emptied instead of opening a fresh one.
    const tables = await engine.rows<{ name: string }>(
      `SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' AND name != 'schema_migrations'`,
    );
    for (const { name } of tables) await engine.command(`TRUNCATE TABLE ${name}`);
    file = book;
    started = performance.now();
    summary = await runImport(engine, await planImport('tardis', [book, trades]));
  }
  const seconds = (performance.now() - started) / 1000;
  const rows = Object.values(summary.rows).reduce((a, b) => a + b, 0);
  // Before the baseline, which holds its rows in JS.
  const maxRssMb = Math.round(process.resourceUsage().maxRSS / 1024);

  // Baseline: the same tick rows (seq shifted so deduplication does not drop them), serialized
  // beforehand, inserted by the engine alone in batches of the writer's default size.
  const text = (
    await engine.rows<{ line: string }>(
      "SELECT formatRow('JSONEachRow', asset_id, t, seq + 1 AS seq, event, side, best_bid, best_ask, price, size, market, local_t) AS line " +
        'FROM ticks ORDER BY ' +
        'asset_id, t, seq',
    )
  ).map((r) => r.line.trimEnd());
  const rawStarted = performance.now();
  for (let i = 0; i < text.length; i += 50_000) {
    await engine.insertJsonEachRow('ticks', text.slice(i, i + 50_000).join('\n'), { deduplicate_blocks_in_dependent_materialized_views: 1 });
  }
  const rawSeconds = (performance.now() - rawStarted) / 1000;
  process.stdout.write(
    `${JSON.stringify({
      seconds,
      events: summary.events,
      ticks: summary.rows.ticks,
      rows,
      problems: summary.problems,
      bytes: statSync(file).size,
      maxRssMb,
      rawSeconds,
      rawTicks: text.length,
    })}\n`,
  );
} finally {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}

/** Writes the header line in front of a file the engine wrote. */
async function prepend(path: string, header: string): Promise<void> {
  const { readFile, writeFile } = await import('node:fs/promises');
  await writeFile(path, Buffer.concat([Buffer.from(`${header}\n`), await readFile(path)]));
}
