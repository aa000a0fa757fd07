import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';

/**
 * Starts one redis-server for the whole run on a free loopback port. Suites that need Redis read
 * its URL with inject('redisUrl') and skip (loudly, see scripts/test.mjs) when it is absent,
 * unless TEST_REQUIRE_REDIS=1 (CI) makes its absence a failure.
 */
let redis: ChildProcess | undefined;
let dir: string | undefined;

export async function setup(project: TestProject) {
  const found = spawnSync('redis-server', ['--version']).status === 0;
  if (!found) {
    if (process.env.TEST_REQUIRE_REDIS === '1') throw new Error('redis-server is required (TEST_REQUIRE_REDIS=1) but not installed');
    project.provide('redisUrl', '');
    return;
  }
  const port = await freePort();
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-redis-'));
  redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await waitForPort(port);
  project.provide('redisUrl', `redis://127.0.0.1:${port}`);
  project.provide('redisPort', port);
  project.provide('redisDir', dir);
}

export async function teardown() {
  redis?.kill('SIGKILL');
  if (dir) rmSync(dir, { recursive: true, force: true });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number) {
  const { connect } = await import('node:net');
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => { s.end(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server did not listen on ${port}`);
}

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    redisPort: number;
    redisDir: string;
  }
}
