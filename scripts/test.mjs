#!/usr/bin/env node
// `npm test`: the whole suite twice — on the embedded engine, then through the ClickHouse server
// backend's HTTP code path (TEST_BACKEND=http) — then the Python client's suite (pytest, against a
// service it starts), and says loudly which suites could not run here.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const has = (cmd, args = ['--version']) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const skipped = [];
if (!has('redis-server')) {
  if (process.env.TEST_REQUIRE_REDIS === '1') fail('redis-server is not installed but TEST_REQUIRE_REDIS=1');
  skipped.push('Redis account-store suites: redis-server is not installed (apt-get install redis-server)');
}
if (!existsSync('/usr/bin/chromium')) {
  if (process.env.TEST_REQUIRE_BROWSER === '1') fail('/usr/bin/chromium is not installed but TEST_REQUIRE_BROWSER=1');
  skipped.push('dashboard browser suite: /usr/bin/chromium is not installed (apt-get install chromium)');
}
// The Python client's suite needs its package and test extras: pip install './clients/python[test]'.
const pythonReady = has('python3', ['-c', 'import tickhouse, pytest, polars, schemathesis, mypy, py_clob_client']);
if (!pythonReady) {
  if (process.env.TEST_REQUIRE_PYTHON === '1') fail("the Python client's test dependencies are missing but TEST_REQUIRE_PYTHON=1 (pip install './clients/python[test]')");
  skipped.push("Python client suite (clients/python): python3 with pip install './clients/python[test]' is needed");
}
warn(skipped);

const extra = process.argv.slice(2);
const runs = [
  { backend: 'embedded', args: [] },
  // Browser tests exercise the page, and the process-level suites start their own embedded
  // services, whatever TEST_BACKEND says: once is enough.
  {
    backend: 'http',
    args: [
      'test/dashboard.browser.test.ts',
      'test/coverage.browser.test.ts',
      'test/billing-replicas.test.ts',
      'test/interrupted-work.test.ts',
      'test/readme-examples.test.ts',
      'test/shutdown.test.ts',
      'test/startup-errors.test.ts',
    ].flatMap((file) => ['--exclude', file]),
  },
];
const results = [];
for (const run of runs) {
  console.log(`\n=== npm test: TEST_BACKEND=${run.backend} ===\n`);
  const r = spawnSync('node_modules/.bin/vitest', ['run', ...run.args, ...extra], {
    stdio: 'inherit',
    env: { ...process.env, TEST_BACKEND: run.backend },
  });
  results.push({ name: `TEST_BACKEND=${run.backend}`, ok: r.status === 0 });
}
if (pythonReady) {
  console.log('\n=== npm test: Python client (pytest clients/python) ===\n');
  // Any non-zero exit fails the run, pytest's 5 ("no tests collected") included.
  const r = spawnSync('python3', ['-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', 'clients/python/tests'], { stdio: 'inherit' });
  results.push({ name: 'Python client (pytest)', ok: r.status === 0 });
}
warn(skipped);
for (const r of results) console.log(`${r.name}: ${r.ok ? 'passed' : 'FAILED'}`);
const failed = results.filter((r) => !r.ok).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);

function warn(list) {
  if (!list.length) return;
  const bar = '!'.repeat(78);
  console.warn(`\n${bar}\n!! SKIPPED SUITES (they did not run on this machine):`);
  for (const s of list) console.warn(`!!   - ${s}`);
  console.warn(`${bar}\n`);
}

function fail(message) {
  console.error(`npm test: ${message}`);
  process.exit(1);
}
