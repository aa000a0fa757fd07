import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';

/**
 * A local Redis Cluster of three masters on loopback ports: Debian's redis-server with
 * `cluster-enabled yes`, joined by `redis-cli --cluster create`. `durable` gives every node an
 * append-only file synced on each write, so a killed node restarts with all it acknowledged (its
 * cluster config, nodes.conf, is synced by Redis itself on every change).
 */
export interface LocalRedisCluster {
  /** Seed URLs of every node, comma-separated: REDIS_URL with REDIS_CLUSTER=1. */
  url: string;
  ports: number[];
  /** SIGKILL every node and wait until they are gone. */
  kill(): Promise<void>;
  /**
   * Start every node again with the same arguments (same ports, config and files) and wait until
   * the cluster is ok, or with `forming` only until the nodes answer (the cluster is not ok yet:
   * a restarted master refuses writes for its first two seconds).
   */
  restart(options?: { forming?: boolean }): Promise<void>;
  /** Kill the nodes and remove their files. */
  stop(): Promise<void>;
}

export async function startRedisCluster(options: { durable?: boolean } = {}): Promise<LocalRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'tickhouse-redis-cluster-'));
  const nodes: { port: number; args: string[]; process?: ChildProcess }[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const nodeDir = join(dir, String(port));
    mkdirSync(nodeDir);
    const persistence = options.durable ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
    // The cluster bus gets a free port of its own: the default, port + 10000, may be taken or out of range.
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--cluster-enabled',
      'yes',
      '--cluster-port',
      String(await freePort()),
      '--cluster-config-file',
      'nodes.conf',
      '--dir',
      nodeDir,
      '--save',
      '',
      ...persistence,
    ];
    nodes.push({ port, args });
  }
  const ports = nodes.map((n) => n.port);

  const startNodes = () => {
    for (const node of nodes) node.process = spawn('redis-server', node.args, { stdio: 'ignore' });
    return Promise.all(ports.map((port) => waitFor(`redis-server on ${port}`, () => ping(port))));
  };
  const kill = () =>
    Promise.all(
      nodes.map(async (node) => {
        const proc = node.process;
        node.process = undefined;
        if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
        const exited = new Promise((resolve) => proc.once('exit', resolve));
        proc.kill('SIGKILL');
        await exited;
      }),
    ).then(() => undefined);
  const clusterOk = () =>
    Promise.all(ports.map((port) => waitFor(`cluster_state:ok on ${port}`, async () => (await clusterInfo(port))?.includes('cluster_state:ok') ?? false)));

  try {
    await startNodes();
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    await clusterOk();
  } catch (err) {
    await kill();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: ports.map((p) => `redis://127.0.0.1:${p}`).join(','),
    ports,
    kill,
    async restart({ forming = false } = {}) {
      await startNodes();
      if (!forming) await clusterOk();
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One command on one node; null while the node cannot answer it. */
async function ask(port: number, command: (r: Redis) => Promise<string>): Promise<string | null> {
  const r = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false });
  r.on('error', () => {});
  try {
    await r.connect();
    return await command(r);
  } catch {
    return null;
  } finally {
    r.disconnect();
  }
}

const ping = async (port: number) => (await ask(port, (r) => r.ping())) === 'PONG';
const clusterInfo = (port: number) => ask(port, (r) => r.cluster('INFO') as Promise<string>);

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: not reached within ${timeoutMs} ms`);
}

function run(command: string, args: string[]) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${output}`))));
  });
}
