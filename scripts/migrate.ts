import { runCli } from '../src/cli.js';
import { createEngine } from '../src/clickhouse/index.js';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { loadConfig } from '../src/config.js';

/** `npm run migrate`: applies pending clickhouse/*.sql migrations and says which. */
await runCli(async () => {
  const config = loadConfig();
  const engine = createEngine(config);
  try {
    console.log(`ClickHouse: ${engine.location}`);
    const applied = await runMigrations(engine);
    console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Schema is up to date.');
  } finally {
    await engine.close();
  }
});
