import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../src/clickhouse/embedded.js';
import type { Engine } from '../../src/clickhouse/engine.js';
import { runMigrations } from '../../src/clickhouse/migrations.js';
import { ServerEngine } from '../../src/clickhouse/server.js';

export interface TestEngine {
  engine: Engine;
  dataDir: string;
  /** Only with TEST_BACKEND=http: the loopback ClickHouse HTTP server (outage simulation, running queries). */
  http?: Awaited<ReturnType<typeof import('./clickhouse-http-server.js').startClickHouseHttpServer>>;
  close(): Promise<void>;
}

/** The backend the suite runs against: embedded chDB by default, the HTTP server path with TEST_BACKEND=http. */
export const TEST_BACKEND = process.env.TEST_BACKEND === 'http' ? 'http' : 'embedded';

/** A fresh, migrated engine on its own temporary directory (one per test file: one chDB dir per process). */
export async function createTestEngine(): Promise<TestEngine> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-test-'));
  let engine: Engine;
  let http: TestEngine['http'];
  if (TEST_BACKEND === 'http') {
    const { startClickHouseHttpServer } = await import('./clickhouse-http-server.js');
    http = await startClickHouseHttpServer({ dataDir });
    engine = new ServerEngine({ url: http.url, username: 'default', password: '', database: 'default' });
  } else {
    engine = EmbeddedEngine.open(dataDir, 4);
  }
  await runMigrations(engine);
  return {
    engine,
    dataDir,
    http,
    async close() {
      await engine.close();
      await http?.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
