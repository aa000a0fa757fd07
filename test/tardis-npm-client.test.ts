import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { generateFrames } from './support/book-frames.js';
import { type DataApp, startDataApp } from './support/data-app.js';

/**
 * The npm `tardis-dev` client (13.35.3, the registry's newest) downloading from tickhouse
 * (docs/TARDIS.md §4): it only speaks HTTPS and ignores init({datasetsEndpoint}), so the service is
 * served over TLS with a throwaway certificate and the endpoint set as docs/TARDIS.md says. Its
 * `replay` refuses `polymarket` before any request (it lists exchanges itself): that is asserted too.
 */
const require = createRequire(import.meta.url);
const tardis = require('tardis-dev') as {
  downloadDatasets(o: Record<string, unknown>): Promise<void>;
  replay(o: Record<string, unknown>): AsyncIterable<unknown>;
};
const options = require('tardis-dev/dist/options') as { getOptions(): Record<string, unknown> };

let app: DataApp;
let server: ServerType;
let dir: string;
let endpoint: string;
const START = Date.UTC(2025, 11, 18, 10, 0);
const frames = generateFrames(20261128, 800, START);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-tardis-npm-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-keyout', `${dir}/key.pem`, '-out', `${dir}/cert.pem`],
    {
      stdio: 'ignore',
    },
  );
  // The throwaway certificate is trusted by nobody: this worker accepts it (the client has no option for a CA).
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
  app = await startDataApp(START + 2 * 86_400_000);
  await replayLines(app.te.engine, frames.lines, { sourceId: 'tardis-npm' });
  server = serve({
    fetch: app.app.fetch,
    port: 0,
    hostname: '127.0.0.1',
    createServer,
    serverOptions: { key: readFileSync(`${dir}/key.pem`), cert: readFileSync(`${dir}/cert.pem`) },
  });
  await new Promise((r) => server.once('listening', r));
  endpoint = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1/tardis/datasets`;
}, 120_000);

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('npm tardis-dev', () => {
  it('downloadDatasets saves the service’s files, byte for byte', async () => {
    Object.assign(options.getOptions(), { datasetsEndpoint: endpoint });
    const types = ['trades', 'incremental_book_L2', 'book_snapshot_5', 'quotes'];
    await tardis.downloadDatasets({
      exchange: 'polymarket',
      dataTypes: types,
      symbols: ['1001', '2001'],
      from: '2025-12-18',
      to: '2025-12-19',
      apiKey: app.key,
      downloadDir: dir,
    });
    for (const type of types) {
      for (const asset of ['1001', '2001']) {
        const saved = gunzipSync(readFileSync(join(dir, `polymarket_${type}_2025-12-18_${asset}.csv.gz`))).toString();
        const served = await app.get(`/v1/tardis/datasets/polymarket/${type}/2025/12/18/${asset}.csv.gz`);
        expect(saved).toBe(gunzipSync(Buffer.from(await served.arrayBuffer())).toString());
        expect(saved.split('\n').length).toBeGreaterThan(5);
      }
    }
  });

  it('replay refuses polymarket before any request (it needs tardis-node 16.5.0 or later)', async () => {
    const it = tardis.replay({ exchange: 'polymarket', from: '2025-12-18', to: '2025-12-18T00:01:00.000Z', filters: [] })[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toThrow(/Invalid "exchange" argument: polymarket/);
  });
});
