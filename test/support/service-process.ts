import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** `npm start` (src/main.ts) as a child process, the way an operator runs it. */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  /** Everything the child has printed so far, and the signal that ended it (null while running or on exit). */
  output(): { stdout: string; stderr: string; signal: NodeJS.Signals | null };
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** Resolves once the child says it is serving; rejects, with its output, if it exits first or takes over `ms`. */
  serving(ms?: number): Promise<void>;
}

export function startService(env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    // No backend of the test run leaks in: each test names the ones it wants.
    env: { ...process.env, CLICKHOUSE_URL: '', REDIS_URL: '', NOWPAYMENTS_API_KEY: '', HOST: '127.0.0.1', LOG_LEVEL: 'warn', DEMO_DATA: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  let signal: NodeJS.Signals | null = null;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, by) => {
      signal = by;
      resolve(code);
    }),
  );
  const output = () => ({ stdout, stderr, signal });
  return {
    child,
    output,
    exited,
    serving: (ms = 60_000) =>
      new Promise<void>((resolve, reject) => {
        const fail = (why: string) => reject(new Error(`${why}\n--- child stdout:\n${stdout}\n--- child stderr:\n${stderr}`));
        const timer = setTimeout(() => fail(`not serving after ${ms} ms`), ms);
        const check = () => {
          if (!stdout.includes('tickhouse is serving on')) return;
          clearTimeout(timer);
          child.stdout!.off('data', check);
          resolve();
        };
        child.stdout!.on('data', check);
        check();
        exited.then((code) => fail(`exited with ${code} before serving`));
      }),
  };
}
