import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { freePort } from './free-port.js';
import { type LocalRedisCluster, startRedisCluster } from './redis-cluster.js';

export { freePort };

/**
 * Starts one redis-server and one 3-master Redis Cluster for the whole run on free loopback ports.
 * Suites that need Redis read their URLs with inject('redisUrl') and inject('redisClusterUrl') and
 * skip (loudly, see scripts/test.mjs) when they are absent, unless TEST_REQUIRE_REDIS=1 (CI) makes
 * their absence a failure.
 */
let redis: ChildProcess | undefined;
let dir: string | undefined;
let cluster: LocalRedisCluster | undefined;

export async function setup(project: TestProject) {
  const found = spawnSync('redis-server', ['--version']).status === 0;
  // redis-cli creates the cluster; Debian ships it with redis-server (redis-tools).
  const clusterTools = found && spawnSync('redis-cli', ['--version']).status === 0;
  if (!found || !clusterTools) {
    if (process.env.TEST_REQUIRE_REDIS === '1') throw new Error('redis-server and redis-cli are required (TEST_REQUIRE_REDIS=1) but not installed');
    project.provide('redisClusterUrl', '');
  }
  if (!found) {
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
  if (clusterTools) {
    cluster = await startRedisCluster();
    project.provide('redisClusterUrl', cluster.url);
  }
}

export async function teardown() {
  redis?.kill('SIGKILL');
  if (dir) rmSync(dir, { recursive: true, force: true });
  await cluster?.stop();
}

async function waitForPort(port: number) {
  const { connect } = await import('node:net');
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.end();
        resolve(true);
      });
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
    /** Seed URLs of the local Redis Cluster, comma-separated; '' when it could not be started here. */
    redisClusterUrl: string;
  }
}
