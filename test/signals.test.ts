import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { freePort } from './support/global-setup.js';

/**
 * The README's `npm start`, for real (issue 25, item 6): npm runs the compiled service as its only
 * child (no shell, no tsx in between), so SIGTERM to the PID the user started — or to PID 1 of a
 * PID namespace, as in a container whose command is `npm start` — drains the service: the log shows
 * it, an open replay socket is closed with 1001 (going away), the exit code is 0 and no process of
 * the tree is left, nothing holds DATA_DIR. The other process suites run src/main.ts under tsx.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Run {
  /** What was spawned (npm, or unshare), leader of its own process group. */
  child: ChildProcess;
  /** The PID the signal goes to: npm's, as seen from here. */
  target: () => number;
  out: { stdout: string; stderr: string };
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  dataDir: string;
}
const runs: Run[] = [];
afterEach(() => {
  for (const run of runs.splice(0)) {
    // Only on failure is anything left: the group this test started, by its id.
    if (run.child.exitCode === null && run.child.signalCode === null) {
      try {
        process.kill(-run.child.pid!, 'SIGKILL');
      } catch {}
    }
    rmSync(run.dataDir, { recursive: true, force: true });
  }
});

/** `npm start` as a user's shell runs it: no npm_* variables of the test run leak in. */
function start(prefix: string[], port: number): Run {
  const dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-signals-'));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
  const [cmd, ...args] = [...prefix, 'npm', 'start'];
  const child = spawn(cmd, args, {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...env,
      ...{ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', CLICKHOUSE_URL: '', REDIS_URL: '', NOWPAYMENTS_API_KEY: '' },
      ...{ LOG_LEVEL: 'info', DEMO_DATA: '1', DEMO_TICKS: '20000', SHUTDOWN_GRACE_SECONDS: '30' },
    },
  });
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d) => (out.stdout += d));
  child.stderr!.on('data', (d) => (out.stderr += d));
  // 'close': exited, and its stdout and stderr closed, so nothing of the tree still holds them.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  // Under unshare, npm is the child unshare forked (PID 1 inside the namespace).
  const target = () => (prefix.length ? only(childrenOf(child.pid!)) : child.pid!);
  const run = { child, target, out, exited, dataDir };
  runs.push(run);
  return run;
}

/** Polls an observable state (a line printed, a process gone) until it holds. */
async function until<T>(run: Run, what: string, read: () => T | undefined, ms = 120_000): Promise<T> {
  for (const started = Date.now(); ; await new Promise((r) => setTimeout(r, 50))) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() - started > ms || run.child.exitCode !== null) {
      throw new Error(`${what}: not seen (exit ${run.child.exitCode})\n--- stdout:\n${run.out.stdout}\n--- stderr:\n${run.out.stderr}`);
    }
  }
}

/** `p`, or a failure naming what did not happen, with the child's output. */
function within<T>(run: Run, what: string, p: Promise<T>, ms = 60_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms\n--- stdout:\n${run.out.stdout}\n--- stderr:\n${run.out.stderr}`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

const pids = () =>
  readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
/** ppid and pgid from /proc/<pid>/stat (fields 4 and 5, after the parenthesised command); null once gone. */
function stat(pid: number): { ppid: number; pgid: number } | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ');
    return { ppid: Number(fields[1]), pgid: Number(fields[2]) };
  } catch {
    return null;
  }
}
const childrenOf = (pid: number) => pids().filter((p) => stat(p)?.ppid === pid);
const inGroup = (pgid: number) => pids().filter((p) => stat(p)?.pgid === pgid);
function cmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}
/** Processes with a file under dir open (the embedded engine's files and lock, the account store). */
function holders(dir: string): number[] {
  return pids().filter((pid) => {
    try {
      return readdirSync(`/proc/${pid}/fd`).some((fd) => {
        try {
          const path = readlinkSync(`/proc/${pid}/fd/${fd}`);
          return path === dir || path.startsWith(`${dir}/`);
        } catch {
          return false;
        }
      });
    } catch {
      return false;
    }
  });
}
function only(list: number[]): number {
  if (list.length !== 1) throw new Error(`expected one process, found ${JSON.stringify(list)}`);
  return list[0];
}

const unshareWorks = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { stdio: 'ignore' }).status === 0;
if (!unshareWorks) {
  console.warn('signals.test.ts: `unshare --pid --fork --mount-proc` is not permitted here (needs root or CAP_SYS_ADMIN); its case is skipped');
}

describe('npm start and SIGTERM', () => {
  it('to the npm start PID: drained, the replay socket gets 1001, exit 0, no process left', { timeout: 240_000 }, () => drained([]));
  it.skipIf(!unshareWorks)(
    'from outside to PID 1 (npm) of unshare --pid --fork --mount-proc npm start: drained, 1001, exit 0, no process left',
    { timeout: 240_000 },
    () => drained(['unshare', '--pid', '--fork', '--mount-proc']),
  );
});

/** Starts `npm start` (under `prefix`), opens a replay, sends SIGTERM to npm, and checks the drain. */
async function drained(prefix: string[]) {
  const port = await freePort();
  const run = start(prefix, port);
  const key = await until(run, 'the demo key', () => /Local demo API key[^\n]*\n\s+(\S+)/.exec(run.out.stdout)?.[1]);
  const url = await until(run, 'the serving line', () => /tickhouse is serving on (http:\/\/\S+)/.exec(run.out.stdout)?.[1]);

  // The process tree: npm, and as its only child node running the compiled service.
  const npm = run.target();
  expect(cmdline(npm).join(' ')).toMatch(/npm(-cli\.js)? start$/);
  const node = only(childrenOf(npm));
  expect(cmdline(node).slice(1)).toEqual(['dist/main.js']);
  expect(childrenOf(node)).toEqual([]);
  expect(holders(run.dataDir)).toEqual([node]);

  // An open replay that has received its books.
  const { data: markets } = await (await fetch(`${url}/v1/markets?limit=5`)).json();
  const replay = `${url.replace('http', 'ws')}/v1/replay/market?from=${Date.now() - 3_600_000}&to=${Date.now()}&speed=1&key=${key}`;
  const ws = new WebSocket(replay);
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await within(run, 'the replay handshake', new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject))));
  const books = new Promise((resolve) => ws.once('message', resolve));
  ws.send(JSON.stringify({ assets_ids: [markets[0].asset_id], type: 'market' }));
  await within(run, 'the replay books', books);

  process.kill(npm, 'SIGTERM');
  expect(await within(run, 'the replay socket closing', closed)).toEqual({ code: 1001, reason: 'server shutting down' });
  const exit = await within(run, 'the exit (and its output closed)', run.exited);
  expect(exit, `--- stdout:\n${run.out.stdout}\n--- stderr:\n${run.out.stderr}`).toEqual({ code: 0, signal: null });

  const log = run.out.stdout;
  expect(log).toMatch(/"msg":"shutting down","signal":"SIGTERM"/);
  expect(log.indexOf('"msg":"stopped"')).toBeGreaterThan(log.indexOf('"msg":"shutting down"'));
  expect(run.out.stderr).toBe('');
  // Nothing of the tree is left, and nothing holds DATA_DIR.
  expect(inGroup(run.child.pid!)).toEqual([]);
  expect(stat(node)).toBeNull();
  expect(holders(run.dataDir)).toEqual([]);
}
