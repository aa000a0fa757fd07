import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';

/**
 * The net under every request path (process-guard.ts, request-scope.ts): an exception or a rejection
 * nothing caught, raised by a request's own work, is logged with that request's id and the request is
 * answered with a 500 in the contract's shape; the process goes on serving. Node's default is to exit.
 */
let child: ChildProcess;
let output = '';
let base = '';

beforeAll(async () => {
  child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./support/guarded-server.ts', import.meta.url))], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', () => /port (\d+)/.test(output) && resolve(/port (\d+)/.exec(output)![1]));
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)));
  });
  base = `http://127.0.0.1:${port}`;
}, 60_000);
afterAll(() => child?.kill('SIGKILL'));

it.each([
  ['/throws-later', 'uncaught exception', 'thrown in a timer'],
  ['/rejects-later', 'unhandled rejection', 'rejected in a timer'],
])('%s: a 500 naming the request id, the error logged with it, and the process serves on', async (path, kind, message) => {
  const res = await fetch(`${base}${path}`, { headers: { 'X-Request-Id': `guard-${kind.split(' ')[0]}` } });
  expect(res.status).toBe(500);
  expect(await res.json()).toEqual({
    detail: { error: 'internal_error', message: 'Internal error; quote request_id when reporting it.', request_id: `guard-${kind.split(' ')[0]}` },
  });
  // The log line travels on the child's stdout, apart from the answer: wait for it.
  const logged = () =>
    output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
  const wanted = expect.objectContaining({ level: 'error', msg: kind, request_id: `guard-${kind.split(' ')[0]}`, error: expect.stringContaining(message) });
  for (const started = Date.now(); Date.now() - started < 10_000 && !output.includes(`"msg":"${kind}"`); ) await new Promise((r) => setTimeout(r, 20));
  expect(logged()).toContainEqual(wanted);
  expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok' });
  expect(child.exitCode).toBeNull();
});
