import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/global-setup.js';
import { type ServiceProcess, startService } from './support/service-process.js';

/**
 * Every curl example of README.md, extracted from the file and run as printed against a fresh
 * quick-start service (demo data, the printed demo key). Only what the reader fills in is filled in:
 * the key, the asset id, and the port of this test's service instead of 8080.
 */
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const curlBlocks = [...README.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) => m[1]).filter((block) => /^curl /m.test(block));

const dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-readme-'));
const workDir = mkdtempSync(join(tmpdir(), 'tickhouse-readme-cwd-'));
let service: ServiceProcess;
let port: number;
let key: string;
let asset: string;

beforeAll(async () => {
  port = await freePort();
  service = startService({ DATA_DIR: dataDir, PORT: String(port), DEMO_DATA: '1', DEMO_TICKS: '5000' });
  await service.serving();
  // The demo key is printed once the demo data is in, with an example naming one of its assets.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const printed = /Local demo API key.*\n\s+(\S+)[\s\S]*asset_id=(\d+)/.exec(service.output().stdout);
    if (printed) {
      [, key, asset] = printed;
      break;
    }
    if (Date.now() > deadline) throw new Error(`no demo key printed:\n${service.output().stdout}\n${service.output().stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}, 90_000);

afterAll(async () => {
  service?.child.kill('SIGTERM');
  await service?.exited;
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(workDir, { recursive: true, force: true });
});

describe('README examples', () => {
  it('has the quick start and the "pulling data at scale" curl blocks', () => {
    expect(curlBlocks).toHaveLength(2);
    expect(curlBlocks.join('\n').match(/^curl /gm)).toHaveLength(8);
  });

  it.each(curlBlocks.map((block, i) => [i + 1, block] as const))('curl block %i works as printed', { timeout: 60_000 }, (_n, block) => {
    const script = block
      .replaceAll('localhost:8080', `127.0.0.1:${port}`)
      .replaceAll('<the printed key>', key)
      .replace(/^KEY=th_live_\.\.\.; A=<asset_id>$/m, `KEY=${key}; A=${asset}`);
    expect(script).not.toMatch(/<[a-z _]+>|th_live_\.\.\./);
    // Any answer other than 2xx fails the block; each call is counted.
    const run = spawnSync('bash', ['-c', `set -eo pipefail\ncurl() { echo >> calls; command curl -sS --fail-with-body "$@"; }\n${script}`], {
      cwd: workDir,
      encoding: 'utf8',
      timeout: 50_000,
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(readFileSync(join(workDir, 'calls'), 'utf8').length).toBe(block.match(/^curl /gm)!.length);
    rmSync(join(workDir, 'calls'));
    if (block.includes('-o ticks.csv.zst')) expect(statSync(join(workDir, 'ticks.csv.zst')).size).toBeGreaterThan(100);
  });
});
