import { createServer } from 'node:http';
import { runCli } from './cli.js';
import { createEngine } from './clickhouse/index.js';
import { runMigrations } from './clickhouse/migrations.js';
import { loadConfig } from './config.js';
import { loadRecorderOptions, RECORDER_USAGE } from './ingest/recorder/options.js';
import { type Recorder, startRecorder } from './ingest/recorder/recorder.js';
import { formatStatusLine } from './ingest/recorder/status.js';
import { errorText, log, setLogLevel } from './log.js';
import { metrics } from './metrics.js';

/**
 * `npm run record -- (--all [--max-assets N] | --assets <id,...>) [--archive <dir>] …`: the live
 * recorder as its own process (with a ClickHouse server; the embedded engine allows one process per
 * DATA_DIR, so there run it inside the API with RECORDER=1). SIGINT/SIGTERM: stop reading, store
 * every buffered row, exit 0; a second signal exits at once with code 1. A process entry like main.ts,
 * so `npm run record` runs it compiled (dist/record.js) and the signal reaches this process.
 */
const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(`${RECORDER_USAGE}\n`);
  process.exit(0);
}

await runCli(async () => {
  const config = loadConfig();
  setLogLevel(config.LOG_LEVEL);
  const options = loadRecorderOptions(process.env, argv);
  const engine = createEngine(config);
  log.info('clickhouse backend', { backend: engine.backend, location: engine.location });
  await runMigrations(engine);

  const metricsServer = options.metricsPort
    ? createServer((req, res) => {
        if (req.url === '/metrics') res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(metrics.render());
        else res.writeHead(404).end();
      }).listen(options.metricsPort, () => log.info('recorder metrics', { url: `http://localhost:${options.metricsPort}/metrics` }))
    : null;

  let recorder: Recorder | null = null;
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      log.error('second signal: exiting without waiting for the buffer', { signal, pending_rows: recorder?.status().sink.pending ?? 0 });
      process.exit(1);
    }
    stopping = true;
    log.info('recorder shutting down', { signal });
    // Still discovering: no frame has been received, and metadata is fetched again on the next start.
    if (!recorder) process.exit(0);
    recorder
      .stop()
      .then(async () => {
        metricsServer?.close();
        await engine.close();
        process.exit(0);
      })
      .catch((err) => {
        log.error('recorder shutdown failed', { error: errorText(err) });
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  recorder = await startRecorder(engine, options, { onStatus: (r) => process.stdout.write(`${formatStatusLine(r)}\n`) });
});
