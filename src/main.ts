import type { AddressInfo } from 'node:net';
import { AccountStoreLockedError } from './accounts/embedded-store.js';
import { openAccountStore } from './accounts/index.js';
import { createApp } from './app.js';
import { createPaymentProvider } from './billing/index.js';
import { DataDirLockedError } from './clickhouse/errors.js';
import { createEngine } from './clickhouse/index.js';
import { runMigrations } from './clickhouse/migrations.js';
import { systemClock } from './clock.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { loadDemoDataIfEmpty } from './demo/load.js';
import { gracefulServer } from './http/graceful-server.js';
import { createHttpServer } from './http/http-server.js';
import { loadRecorderOptions } from './ingest/recorder/options.js';
import { startRecorder } from './ingest/recorder/recorder.js';
import { errorText, log, setLogLevel } from './log.js';
import { guardProcess } from './process-guard.js';
import { monitorProcess } from './process-metrics.js';

/** What start-up has opened so far: closed again if it fails, so no lock file outlives the process. */
const opened: { close(): Promise<void> }[] = [];

/** Boot: config → engine + migrations → account store → HTTP → demo data, recorder; SIGTERM drains. */
async function main() {
  guardProcess();
  monitorProcess();
  const config = loadConfig();
  setLogLevel(config.LOG_LEVEL);
  const { engine, accounts, payments } = await openStores(config);

  // Partial data until the first-start demo load has finished or found the store already filled.
  let loading = config.DEMO_DATA;
  const deps = { config, engine, accounts, clock: systemClock, payments, loading: () => loading };
  const app = createApp(deps);
  const http = await listen(config, app);
  // Serve at once; a first start fills the empty store meanwhile (a few seconds of partial data).
  loadDemoDataIfEmpty(deps)
    .catch((err) => log.error('demo data failed to load', { error: errorText(err) }))
    .finally(() => {
      loading = false;
    });
  // The embedded engine allows one process per DATA_DIR, so the recorder can share this one's.
  const recorder = config.RECORDER ? await startRecorder(engine, loadRecorderOptions(process.env)) : null;
  drainOnSignals(config, { http, app, recorder, engine, accounts });
}

/** The engine (migrated), the account store and the payment provider, each logged as it opens. */
async function openStores(config: Config) {
  const engine = createEngine(config);
  opened.push(engine);
  log.info('clickhouse backend', { backend: engine.backend, location: engine.location });
  const applied = await runMigrations(engine);
  if (applied.length) log.info('migrations applied', { applied });
  const accounts = await openAccountStore(config);
  opened.push(accounts);
  log.info('account store', { kind: accounts.kind });

  const payments = createPaymentProvider(config);
  log.info('payment provider', { provider: config.PAYMENTS });
  if (payments?.name === 'sandbox')
    log.warn('billing runs in sandbox mode: invoices are paid with a local Pay button, no money moves (set NOWPAYMENTS_API_KEY for real payments)');
  if (!payments) log.warn('payments are off: subscribe answers 503 payments_unavailable (set NOWPAYMENTS_API_KEY, or PAYMENTS=sandbox to try billing)');
  return { engine, accounts, payments };
}

/** The HTTP server, listening (a port in use or not allowed is a ListenError), with its banner printed. */
async function listen(config: Config, app: ReturnType<typeof createApp>) {
  // WebSocket handshakes (the replay) reach 'upgrade', not the request handler: the replay takes them.
  const server = createHttpServer(app.fetch, app.replay);
  server.listen(config.PORT, config.HOST);
  const http = gracefulServer(server);
  await new Promise((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' || err.code === 'EACCES' ? new ListenError(config, err.code) : err));
  });
  const url = `http://${config.HOST === '0.0.0.0' ? 'localhost' : config.HOST}:${(server.address() as AddressInfo).port}`;
  log.info('listening', { url, openapi: `${url}/v1/openapi.json` });
  process.stdout.write(`\n  tickhouse is serving on ${url}  (dashboard: ${url}/, API contract: ${url}/v1/openapi.json)\n\n`);
  return http;
}

/**
 * SIGTERM or SIGINT: stop accepting, let in-flight requests finish up to the grace period (then cut
 * them), flush the recorder meanwhile, stop the book cache's fill, close the engine and the store, exit 0.
 */
function drainOnSignals(
  config: Config,
  running: {
    http: ReturnType<typeof gracefulServer>;
    app: ReturnType<typeof createApp>;
    recorder: Awaited<ReturnType<typeof startRecorder>> | null;
    engine: { close(): Promise<void> };
    accounts: { close(): Promise<void> };
  },
): void {
  const { http, app, recorder, engine, accounts } = running;
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal, grace_seconds: config.SHUTDOWN_GRACE_SECONDS });
    const force = setTimeout(() => {
      log.warn('grace period over; closing remaining connections');
      http.cut();
    }, config.SHUTDOWN_GRACE_SECONDS * 1000);
    force.unref();
    // The recorder stops reading at once and flushes its buffer while in-flight requests finish.
    const recorderStopped = recorder?.stop() ?? Promise.resolve();
    app.replay.close();
    http.drain(async () => {
      await recorderStopped.catch((err) => log.error('recorder flush failed', { error: errorText(err) }));
      // A book cache fill reads from the engine in the background: stopped before the engine closes.
      await app.books.close();
      await Promise.allSettled([engine.close(), accounts.close()]);
      log.info('stopped');
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

/** The port cannot be had: taken by another process, or privileged. */
class ListenError extends Error {
  constructor(config: Config, code: 'EADDRINUSE' | 'EACCES') {
    super(
      code === 'EADDRINUSE'
        ? `PORT ${config.PORT} is already in use on ${config.HOST}: stop the process listening there or set another PORT`
        : `PORT ${config.PORT} on ${config.HOST} needs privileges this process lacks: set a PORT above 1023`,
    );
  }
}

/** Problems an operator fixes (configuration, a port, a lock) are one line; anything else keeps its stack. */
const OPERATOR_ERRORS = [ConfigError, DataDirLockedError, AccountStoreLockedError, ListenError];

main().catch(async (err) => {
  const known = OPERATOR_ERRORS.some((type) => err instanceof type);
  process.stderr.write(known ? `tickhouse: ${err.message}\n` : `tickhouse: failed to start: ${errorText(err, 'stack')}\n`);
  await Promise.allSettled(opened.reverse().map((resource) => resource.close()));
  process.exit(1);
});
