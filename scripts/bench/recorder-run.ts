import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../src/clickhouse/embedded.js';
import { runMigrations } from '../../src/clickhouse/migrations.js';
import { loadRecorderOptions } from '../../src/ingest/recorder/options.js';
import { startRecorder } from '../../src/ingest/recorder/recorder.js';
import { setLogLevel } from '../../src/log.js';
import { ASSETS } from './recorder-frames.js';
import { rawJsonInsert } from './shared.js';

/**
 * The recorder side of the recorder bench, in its own process (its own chDB directory, and the feed's
 * CPU stays in the parent): `recorder-run.ts <wsUrl> <frames> <batchRows>`. Prints `{"ready":true}`
 * once started, then one JSON line: the recorder's run from first frame to last row stored, and the
 * raw engine inserting the same tick rows as JSONEachRow in batches of the same size.
 */
const [wsUrl, framesArg, batchArg] = process.argv.slice(2);
const expectedFrames = Number(framesArg) + 1; // + the initial dump
const batchRows = Number(batchArg);
setLogLevel('error');
const dir = mkdtempSync(join(tmpdir(), 'tickhouse-bench-recorder-'));
const engine = EmbeddedEngine.open(dir, 4);
try {
  await runMigrations(engine);
  const options = loadRecorderOptions({
    RECORDER_ASSETS: ASSETS.join(','),
    POLYMARKET_WS_URL: wsUrl,
    // No Gamma in the bench: the metadata lookup fails at once and ticks stay UNKNOWN.
    GAMMA_URL: 'http://127.0.0.1:9',
    RECORDER_BATCH_ROWS: String(batchRows),
    RECORDER_DISCOVERY_INTERVAL_S: '0',
    RECORDER_STATUS_INTERVAL_S: '0',
  });
  const recorder = await startRecorder(engine, options);
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  while (recorder.status().frames === 0) await sleep(1);
  const started = performance.now();
  while (recorder.status().frames < expectedFrames || recorder.status().sink.pending > 0) await sleep(2);
  const seconds = (performance.now() - started) / 1000;
  await recorder.stop();
  const s = recorder.status();

  // Baseline: the same tick rows inserted by the engine alone, as JSON, in batches of the same size.
  const { rawSeconds, rawTicks } = await rawJsonInsert(engine, batchRows);
  process.stdout.write(
    `${JSON.stringify({
      seconds,
      frames: s.frames,
      ticks: s.sink.stored.ticks,
      rows: s.sink.stored.ticks + s.sink.stored.book_snapshots,
      rawSeconds,
      rawTicks,
    })}\n`,
  );
} finally {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}
