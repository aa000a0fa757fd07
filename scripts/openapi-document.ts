import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAccountStore } from '../src/accounts/index.js';
import { createApp } from '../src/app.js';
import { EmbeddedEngine } from '../src/clickhouse/embedded.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';

/**
 * `/v1/openapi.json` as the service serves it with the default configuration (PUBLIC_URL
 * http://localhost:8080, sandbox payments), from a throwaway data directory: the input of the
 * generated TypeScript client and of the lint run. Nothing is ingested; no query runs.
 */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'tickhouse-openapi-'));
  const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent', DEMO_DATA: '0', PUBLIC_URL: 'http://localhost:8080' });
  const engine = EmbeddedEngine.open(config.dataDir, 1);
  const accounts = await openAccountStore(config);
  try {
    const response = await createApp({ config, engine, accounts, clock: systemClock }).request('/v1/openapi.json');
    return (await response.json()) as Record<string, unknown>;
  } finally {
    await accounts.close();
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The committed form of the document: two-space JSON and a final newline. */
export const documentText = (doc: unknown) => `${JSON.stringify(doc, null, 2)}\n`;
