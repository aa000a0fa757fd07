import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './types.js';

/**
 * Cost of authentication + daily counting: requests/s of a trivial counted endpoint behind
 * requireAuth + dailyLimit versus the same handler without them, same server, same run.
 * 32 keep-alive clients each send a request as soon as the previous answer arrived (the
 * autocannon model), DURATION_MS per variant after a short warm-up, in alternating quarter-second
 * slices so that load from other processes hits both variants alike. The server runs in its own
 * process (scripts/bench/auth-server.ts) so the load generator does not steal its CPU.
 * Target: auth + counting costs at most 25% of throughput (ratio ≥ 0.75).
 */
const CONNECTIONS = 32;
const DURATION_MS = 5_000;
const WARMUP_MS = 1_000;
const SLICE_MS = 250;

export async function benchAuth(): Promise<BenchRow[]> {
  const server = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./auth-server.ts', import.meta.url))], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const { port, key, store } = await firstLine<{ port: number; key: string; store: string }>(server.stdout!);
    const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
    const authed = { path: '/v1/orderbook/bench', headers: { Authorization: `Bearer ${key}` } };
    const open = { path: '/open/bench', headers: {} };
    await load(port, agent, open, WARMUP_MS);
    await load(port, agent, authed, WARMUP_MS);
    const total = { open: { requests: 0, seconds: 0 }, authed: { requests: 0, seconds: 0 } };
    for (let slice = 0; slice < DURATION_MS / SLICE_MS; slice++) {
      for (const name of ['open', 'authed'] as const) {
        const run = await load(port, agent, name === 'open' ? open : authed, SLICE_MS);
        total[name].requests += run.requests;
        total[name].seconds += run.seconds;
      }
    }
    agent.destroy();
    const openRps = total.open.requests / total.open.seconds;
    const authRps = total.authed.requests / total.authed.seconds;
    return [
      {
        workload: `auth + daily counter (${store} store): trivial endpoint, ${CONNECTIONS} keep-alive clients, ${DURATION_MS / 1000} s`,
        service: `${Math.round(authRps)} req/s`,
        engine: `${Math.round(openRps)} req/s without auth`,
        ratio: `${(authRps / openRps).toFixed(2)} (target ≥ 0.75)`,
      },
    ];
  } finally {
    server.kill('SIGTERM');
  }
}

/** Requests answered in about `ms` by CONNECTIONS clients in a closed loop; any non-200 aborts. */
async function load(port: number, agent: Agent, target: { path: string; headers: Record<string, string> }, ms: number) {
  let done = 0;
  const started = performance.now();
  const until = started + ms;
  const client = async () => {
    while (performance.now() < until) {
      const status = await get(port, agent, target);
      if (status !== 200) throw new Error(`bench request to ${target.path} answered ${status}`);
      done++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, client));
  return { requests: done, seconds: (performance.now() - started) / 1000 };
}

function get(port: number, agent: Agent, target: { path: string; headers: Record<string, string> }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: target.path, agent, headers: target.headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

function firstLine<T>(stream: NodeJS.ReadableStream): Promise<T> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: stream });
    const early = () => reject(new Error('the bench server exited before it was ready'));
    lines.once('close', early);
    lines.once('line', (line) => {
      lines.off('close', early);
      lines.close();
      resolve(JSON.parse(line) as T);
    });
  });
}
