import { createServer } from 'node:http';
import { runCli } from './cli.js';
import { createEngine } from './clickhouse/index.js';
import { runMigrations } from './clickhouse/migrations.js';
import { ConfigError, loadConfig } from './config.js';
import { loadRecorderOptions, RECORDER_USAGE } from './ingest/recorder/options.js';
import { type Recorder, startRecorder } from './ingest/recorder/recorder.js';
import { formatStatusLine } from './ingest/recorder/status.js';
import { errorText, log, setLogLevel } from './log.js';
import { metrics } from './metrics.js';
import { KalshiAuthError } from './venues/kalshi/markets.js';
import { KALSHI_RECORDER_USAGE, loadKalshiRecorderOptions } from './venues/kalshi/options.js';
import { type KalshiRecorder, startKalshiRecorder } from './venues/kalshi/recorder.js';

/**
 * `npm run record -- (--all [--max-assets N] | --assets <id,...>) [--archive <dir>] …`: the live
 * recorder as its own process (with a ClickHouse server; the embedded engine allows one process per
 * DATA_DIR, so there run it inside the API with RECORDER=1). SIGINT/SIGTERM: stop reading, store
 * every buffered row, exit 0; a second signal exits at once with code 1. A process entry like main.ts,
 * so `npm run record` runs it compiled (dist/record.js) and the signal reaches this process.
 */
const args = process.argv.slice(2);
// `--venue kalshi` records Kalshi (docs/KALSHI.md §3); `--venue polymarket` (the default) is the recorder as before.
const venueAt = args.findIndex((a) => a === '--venue' || a.startsWith('--venue='));
const venue = venueAt < 0 ? 'polymarket' : args[venueAt].includes('=') ? args[venueAt].slice('--venue='.length) : (args[venueAt + 1] ?? '');
const argv = venueAt < 0 ? args : args.filter((_, i) => i !== venueAt && (args[venueAt].includes('=') || i !== venueAt + 1));
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(`${venue === 'kalshi' ? KALSHI_RECORDER_USAGE : RECORDER_USAGE}\n`);
  process.exit(0);
}

if (venue === 'kalshi') await recordKalshi();
else if (venue !== 'polymarket') {
  process.stderr.write(`tickhouse: --venue must be polymarket or kalshi, not ${JSON.stringify(venue)}\n`);
  process.exit(1);
} else
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
    stopOnSignals(
      () => recorder,
      async () => {
        metricsServer?.close();
        await engine.close();
      },
      (signal) => log.error('second signal: exiting without waiting for the buffer', { signal, pending_rows: recorder?.status().sink.pending ?? 0 }),
    );

    recorder = await startRecorder(engine, options, { onStatus: (r) => process.stdout.write(`${formatStatusLine(r)}\n`) });
  });

/** `--venue kalshi`: the Kalshi recorder as its own process, with the same shutdown as the Polymarket one. */
async function recordKalshi(): Promise<void> {
  await runCli(async () => {
    const config = loadConfig();
    setLogLevel(config.LOG_LEVEL);
    const options = loadKalshiRecorderOptions(process.env, argv);
    const engine = createEngine(config);
    log.info('clickhouse backend', { backend: engine.backend, location: engine.location });
    await runMigrations(engine);
    let recorder: KalshiRecorder | null = null;
    stopOnSignals(
      () => recorder,
      () => engine.close(),
    );
    try {
      recorder = await startKalshiRecorder(engine, options);
    } catch (err) {
      if (err instanceof KalshiAuthError) throw new ConfigError(`${err.message}; check KALSHI_API_KEY_ID and KALSHI_PRIVATE_KEY_PATH`);
      throw err;
    }
  });
}

/**
 * SIGTERM / SIGINT: the recorder (once started) stops and flushes, then `close` runs and the process
 * exits 0 (1 when the stop fails). Still discovering: nothing was received, exit at once. A second
 * signal exits 1 without waiting (`onSecond` says what is left behind).
 */
function stopOnSignals(recorder: () => { stop(): Promise<void> } | null, close: () => Promise<void>, onSecond?: (signal: string) => void): void {
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      onSecond?.(signal);
      process.exit(1);
    }
    stopping = true;
    log.info('recorder shutting down', { signal });
    const running = recorder();
    if (!running) process.exit(0);
    running
      .stop()
      .then(async () => {
        await close();
        process.exit(0);
      })
      .catch((err) => {
        log.error('recorder shutdown failed', { error: errorText(err) });
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
