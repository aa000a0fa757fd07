import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../src/clickhouse/embedded.js';
import { runMigrations } from '../../src/clickhouse/migrations.js';
import { loadRecorderOptions } from '../../src/ingest/recorder/options.js';
import { startRecorder } from '../../src/ingest/recorder/recorder.js';
import { formatStatusLine } from '../../src/ingest/recorder/status.js';
import { setLogLevel } from '../../src/log.js';

/**
 * The recorder side of the whole-venue bench (venue.ts), in its own process on a fresh embedded engine,
 * as `npm run record -- --all` runs: `venue-recorder.ts <wsUrl> <gammaUrl>`. Prints JSON lines (`venue`:
 * `ready` once started, `status` with every status line as it is reported); on the IPC message
 * `{"expect": <ticks>}` it waits until that many ticks are stored with nothing
 * buffered, then prints (`done`) the stored ticks by event and the last status line, stops and exits. Its log
 * lines (warnings and errors) share stdout. Its stdin is /dev/null: the embedded engine reads the
 * process's stdin as an INSERT's external data (chdb-io/chdb-core#239), so anything written there
 * makes every insert fail (Code 48).
 */
const [wsUrl, gammaUrl] = process.argv.slice(2);
/** The bench's own lines carry `venue`; anything else on stdout is the recorder's log. */
const say = (kind: 'ready' | 'status' | 'done', o: object) => process.stdout.write(`${JSON.stringify({ venue: kind, ...o })}\n`);
setLogLevel('warn');
const dir = mkdtempSync(join(tmpdir(), 'tickhouse-bench-venue-'));
const engine = EmbeddedEngine.open(dir, 4);
let lastStatus = '';
try {
  await runMigrations(engine);
  const options = loadRecorderOptions({ POLYMARKET_WS_URL: wsUrl, GAMMA_URL: gammaUrl, RECORDER_STATUS_INTERVAL_S: '10' }, ['--all']);
  const recorder = await startRecorder(engine, options, {
    onStatus: (r) => {
      lastStatus = formatStatusLine(r);
      say('status', { status: lastStatus, heapMb: Math.round(process.memoryUsage().heapUsed / 2 ** 20) });
    },
  });
  say('ready', { assets: recorder.status().assets });
  const expected = await new Promise<number>((resolve) => process.once('message', (m) => resolve(Number((m as { expect: number }).expect))));
  const started = performance.now();
  while (recorder.status().sink.stored.ticks < expected || recorder.status().sink.pending > 0) {
    if (performance.now() - started > 30 * 60_000) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const lagMs = performance.now() - started;
  const status = recorder.status();
  lastStatus ||= formatStatusLine({ ...status, framesPerSec: 0, rowsPerSec: 0 });
  await recorder.stop();
  const byEvent = await engine.rows<{ event: string; n: number }>(
    'SELECT toString(event) AS event, toUInt64(count()) AS n FROM ticks GROUP BY event ORDER BY event SETTINGS output_format_json_quote_64bit_integers = 0',
  );
  say('done', {
    lagMs,
    stored: status.sink.stored.ticks,
    byEvent,
    status: lastStatus,
    frames: status.frames,
    malformed: status.malformed,
    reconnects: status.reconnects,
    silent: status.silent,
    live: status.live,
    assets: status.assets,
  });
} finally {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
