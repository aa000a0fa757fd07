import { serve } from '@hono/node-server';
import { openAccountStore } from './accounts/index.js';
import { createApp } from './app.js';
import { createPaymentProvider } from './billing/index.js';
import { loadRecorderOptions } from './ingest/recorder-config.js';
import { startRecorder } from './ingest/recorder.js';
import { createEngine } from './clickhouse/index.js';
import { DataDirLockedError } from './clickhouse/errors.js';
import { runMigrations } from './clickhouse/migrations.js';
import { systemClock } from './clock.js';
import { ConfigError, loadConfig } from './config.js';
import { loadDemoDataIfEmpty } from './demo/load.js';
import { log, setLogLevel } from './log.js';

/** Boot: config → engine + migrations → account store → demo data → HTTP; SIGTERM drains. */
async function main() {
  const config = loadConfig();
  setLogLevel(config.LOG_LEVEL);
  const engine = createEngine(config);
  log.info('clickhouse backend', { backend: engine.backend, location: engine.location });
  const applied = await runMigrations(engine);
  if (applied.length) log.info('migrations applied', { applied });
  const accounts = await openAccountStore(config);
  log.info('account store', { kind: accounts.kind });

  const payments = createPaymentProvider(config);
  log.info('payment provider', { provider: payments.name });
  if (payments.name === 'sandbox') log.warn('billing runs in sandbox mode: invoices are paid with a local Pay button, no money moves (set NOWPAYMENTS_API_KEY for real payments)');

  const deps = { config, engine, accounts, clock: systemClock, payments };
  const app = createApp(deps);
  // The embedded engine allows one process per DATA_DIR, so the recorder can share this one's.
  const recorder = config.RECORDER ? await startRecorder(engine, loadRecorderOptions(process.env)) : null;
  const server = serve({ fetch: app.fetch, port: config.PORT, hostname: config.HOST }, (info) => {
    const url = `http://${config.HOST === '0.0.0.0' ? 'localhost' : config.HOST}:${info.port}`;
    log.info('listening', { url, openapi: `${url}/v1/openapi.json` });
    process.stdout.write(`\n  tickhouse is serving on ${url}  (dashboard: ${url}/, API contract: ${url}/v1/openapi.json)\n\n`);
    // Serve at once; a first start fills the empty store meanwhile (a few seconds of partial data).
    loadDemoDataIfEmpty(deps).catch((err) => log.error('demo data failed to load', { error: String(err) }));
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal, grace_seconds: config.SHUTDOWN_GRACE_SECONDS });
    // Stop accepting, let in-flight requests finish up to the grace period, then close engines.
    const force = setTimeout(() => {
      log.warn('grace period over; closing remaining connections');
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    }, config.SHUTDOWN_GRACE_SECONDS * 1000);
    force.unref();
    // The recorder stops reading at once and flushes its buffer while in-flight requests finish.
    const recorderStopped = recorder?.stop() ?? Promise.resolve();
    server.close(async () => {
      await recorderStopped.catch((err) => log.error('recorder flush failed', { error: String(err) }));
      await Promise.allSettled([engine.close(), accounts.close()]);
      log.info('stopped');
      process.exit(0);
    });
    (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof DataDirLockedError) {
    process.stderr.write(`tickhouse: ${err.message}\n`);
  } else {
    process.stderr.write(`tickhouse: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
});
