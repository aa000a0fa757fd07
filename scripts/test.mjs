#!/usr/bin/env node
// `npm test`: the whole suite twice — on the embedded engine, then through the ClickHouse server
// backend's HTTP code path (TEST_BACKEND=http) — then the Python client's suite (pytest, against a
// service it starts), and says loudly which suites could not run here.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const has = (cmd, args = ['--version']) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const skipped = [];
if (!has('redis-server')) {
  if (process.env.TEST_REQUIRE_REDIS === '1') fail('redis-server is not installed but TEST_REQUIRE_REDIS=1');
  skipped.push('Redis account-store suites: redis-server is not installed (apt-get install redis-server)');
} else if (!has('redis-cli')) {
  if (process.env.TEST_REQUIRE_REDIS === '1') fail('redis-cli (it creates the test Redis Cluster) is not installed but TEST_REQUIRE_REDIS=1');
  skipped.push('Redis Cluster account-store suites: redis-cli is not installed (apt-get install redis-tools)');
}
if (!existsSync('/usr/bin/chromium')) {
  if (process.env.TEST_REQUIRE_BROWSER === '1') fail('/usr/bin/chromium is not installed but TEST_REQUIRE_BROWSER=1');
  skipped.push('dashboard browser suite: /usr/bin/chromium is not installed (apt-get install chromium)');
}
// The Python client's suite needs its package and test extras: pip install './clients/python[test]'.
const pythonReady = has('python3', ['-c', 'import tickhouse, pytest, polars, schemathesis, mypy, py_clob_client, ruff, tardis_dev, hftbacktest']);
if (!pythonReady) {
  if (process.env.TEST_REQUIRE_PYTHON === '1')
    fail("the Python client's test dependencies are missing but TEST_REQUIRE_PYTHON=1 (pip install './clients/python[test]')");
  skipped.push("Python client suite (clients/python): python3 with pip install './clients/python[test]' is needed");
}
warn(skipped);

const extra = process.argv.slice(2);
const results = [];
// One formatter and linter (Biome, biome.jsonc) and the line limit, before any suite: a style
// failure is reported with the rest, not instead of it.
console.log('\n=== npm test: lint (biome check, line limit) ===\n');
// Errors only here (`npm run lint` also lists the complexity and parameter-count warnings).
const lint = spawnSync('sh', ['-c', 'node_modules/.bin/biome check --diagnostic-level=error && node scripts/line-length.mjs'], { stdio: 'inherit' });
results.push({ name: 'lint (npm run lint)', ok: lint.status === 0 });
const runs = [
  { backend: 'embedded', args: [] },
  // Browser tests exercise the page, and the process-level suites start their own embedded
  // services, whatever TEST_BACKEND says: once is enough.
  {
    backend: 'http',
    args: [
      'test/dashboard.browser.test.ts',
      'test/fuzz-service.test.ts',
      'test/coverage.browser.test.ts',
      'test/billing-replicas.test.ts',
      'test/interrupted-work.test.ts',
      'test/readme-examples.test.ts',
      'test/shutdown.test.ts',
      'test/signals.test.ts',
      'test/startup-errors.test.ts',
    ].flatMap((file) => ['--exclude', file]),
  },
];
// Each vitest run also writes a JSON report, so the end of the output can name every failed test:
// a CI log is often read from its tail, hundreds of lines after the failure scrolled past.
const reports = mkdtempSync(join(tmpdir(), 'tickhouse-test-'));
for (const run of runs) {
  console.log(`\n=== npm test: TEST_BACKEND=${run.backend} ===\n`);
  const report = join(reports, `${run.backend}.json`);
  const r = spawnSync('node_modules/.bin/vitest', ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...run.args, ...extra], {
    stdio: 'inherit',
    env: { ...process.env, TEST_BACKEND: run.backend },
  });
  results.push({ name: `TEST_BACKEND=${run.backend}`, ok: r.status === 0, failures: failuresIn(report) });
}
rmSync(reports, { recursive: true, force: true });
if (pythonReady) {
  console.log('\n=== npm test: Python client (pytest clients/python) ===\n');
  // Any non-zero exit fails the run, pytest's 5 ("no tests collected") included. -rfEs lists failures,
  // errors and skips at the end, where a CI log's tail shows them.
  const r = spawnSync('python3', ['-m', 'pytest', '-q', '-rfEs', '-p', 'no:cacheprovider', 'clients/python/tests'], { stdio: 'inherit' });
  results.push({ name: 'Python client (pytest)', ok: r.status === 0 });
  // The client's code under one formatter and linter too (ruff, configured in its pyproject.toml).
  console.log('\n=== npm test: Python client (ruff format --check, ruff check) ===\n');
  const format = spawnSync('python3', ['-m', 'ruff', 'format', '--check', 'clients/python'], { stdio: 'inherit' });
  const check = spawnSync('python3', ['-m', 'ruff', 'check', 'clients/python'], { stdio: 'inherit' });
  results.push({ name: 'Python client (ruff)', ok: format.status === 0 && check.status === 0 });
}
warn(skipped);
for (const r of results) {
  console.log(`${r.name}: ${r.ok ? 'passed' : 'FAILED'}`);
  if (!r.ok) for (const line of r.failures ?? []) console.log(`  ${line}`);
}
const failed = results.filter((r) => !r.ok).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);

// The failed tests of a vitest JSON report, each with the first lines of its error; a suite that
// failed outside any test (an import error, a crashed fork) is named by its file.
function failuresIn(report) {
  if (!existsSync(report)) return ['(vitest wrote no report: it ended before the end of the run)'];
  const lines = [];
  for (const file of JSON.parse(readFileSync(report, 'utf8')).testResults ?? []) {
    const name = file.name.replace(`${process.cwd()}/`, '');
    const failed = (file.assertionResults ?? []).filter((t) => t.status === 'failed');
    for (const t of failed) {
      lines.push(`✗ ${name} > ${t.fullName}`);
      // The message and the test's own frames; the runner's frames say nothing.
      const message = (t.failureMessages ?? [])
        .join('\n')
        .split('\n')
        .filter((l) => l.trim() && !/^\s*at (new Promise|.*node_modules)/.test(l));
      for (const l of message.slice(0, 6)) lines.push(`    ${l.slice(0, 300)}`);
    }
    if (!failed.length && file.status === 'failed') {
      lines.push(`✗ ${name} (the file failed outside its tests)`);
      for (const l of (file.message ?? '')
        .split('\n')
        .filter((l) => l.trim())
        .slice(0, 6))
        lines.push(`    ${l.slice(0, 300)}`);
    }
  }
  return lines;
}

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
