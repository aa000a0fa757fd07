#!/usr/bin/env node
// `npm test`: the whole suite on the embedded engine, the files that reach the engine again through
// the ClickHouse server backend's HTTP code path (TEST_BACKEND=http), then the Python client's suite
// (pytest, against a service it starts, from a virtual environment it makes), and says loudly which
// suites could not run here.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';

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
// The Python client's suite runs from the repository's own virtual environment, .venv/ (gitignored):
// made on first use, ./clients/python[test] installed into it from PyPI, so a fresh clone needs nothing
// but python3. The client is installed again whenever its sources changed since the last install.
const python = preparePython();
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
  // The HTTP pass runs the files whose code can differ with the backend: those that reach
  // test/support/engine.ts (which reads TEST_BACKEND). The others (pure modules, the browser and
  // process-level suites that start their own embedded services, the account stores) would run the
  // very same code twice: once is enough, and CI must stay under 45 minutes.
  // --passWithNoTests: `npm test -- <file>` naming only such files leaves this pass nothing to run.
  { backend: 'http', args: ['--passWithNoTests', ...backendIndependentTests().flatMap((file) => ['--exclude', file])] },
];
// Each vitest run also writes a JSON report, so the end of the output can name every failed test:
// a CI log is often read from its tail, hundreds of lines after the failure scrolled past.
const reports = mkdtempSync(join(tmpdir(), 'tickhouse-test-'));
for (const run of runs) {
  console.log(`\n=== npm test: TEST_BACKEND=${run.backend} ===\n`);
  const report = join(reports, `${run.backend}.json`);
  const r = await runTee('node_modules/.bin/vitest', ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...run.args, ...extra], {
    ...process.env,
    TEST_BACKEND: run.backend,
  });
  const failures = failuresIn(report);
  // A run can fail with every test passed: an unhandled error or rejection, a worker that died, a
  // teardown that timed out. The JSON report holds none of those, so quote vitest's own words.
  if (r.status !== 0 && !failures.length) failures.push(`(no test failed, yet vitest exited ${r.status ?? r.signal}:)`, ...unhandled(r.tail));
  results.push({ name: `TEST_BACKEND=${run.backend}`, ok: r.status === 0, failures });
}
rmSync(reports, { recursive: true, force: true });
if (python) {
  console.log('\n=== npm test: Python client (pytest clients/python, from .venv) ===\n');
  // Any non-zero exit fails the run, pytest's 5 ("no tests collected") included. -rfEs lists failures,
  // errors and skips at the end, where a CI log's tail shows them.
  const r = spawnSync(python, ['-m', 'pytest', '-q', '-rfEs', '-p', 'no:cacheprovider', 'clients/python/tests'], { stdio: 'inherit' });
  results.push({ name: 'Python client (pytest)', ok: r.status === 0 });
  // The client's code under one formatter and linter too (ruff, configured in its pyproject.toml).
  console.log('\n=== npm test: Python client (ruff format --check, ruff check) ===\n');
  const format = spawnSync(python, ['-m', 'ruff', 'format', '--check', 'clients/python'], { stdio: 'inherit' });
  const check = spawnSync(python, ['-m', 'ruff', 'check', 'clients/python'], { stdio: 'inherit' });
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

/** Test files whose imports (followed through test/, statically) never reach test/support/engine.ts. */
function backendIndependentTests() {
  const engine = join(process.cwd(), 'test', 'support', 'engine.ts');
  const known = new Map();
  const reaches = (file) => {
    if (file === engine) return true;
    if (known.has(file)) return known.get(file);
    known.set(file, false); // an import cycle does not reach it through itself
    const text = readFileSync(file, 'utf8');
    let found = /process\.env\.TEST_BACKEND/.test(text);
    for (const [, spec] of text.matchAll(/(?:from |import\()'(\.[^']+)'/g)) {
      const target = join(dirname(file), spec).replace(/\.js$/, '.ts');
      if (!found && target.startsWith(join(process.cwd(), 'test')) && existsSync(target)) found = reaches(target);
    }
    known.set(file, found);
    return found;
  };
  return readdirSync('test')
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join(process.cwd(), 'test', f))
    .filter((f) => !reaches(f))
    .map((f) => relative(process.cwd(), f));
}

/** Runs a command with its output passed through as it comes, and keeps the last 400 lines of it. */
function runTee(cmd, args, env) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ['inherit', 'pipe', 'pipe'] });
    const tail = [];
    // Per stream: a line split across chunks stays whole, and stdout and stderr never mix in one.
    const keeper = (out) => {
      let partial = '';
      const decoder = new TextDecoder();
      return (chunk) => {
        out.write(chunk);
        const lines = (partial + decoder.decode(chunk, { stream: true })).split('\n');
        partial = lines.pop() ?? '';
        tail.push(...lines);
        if (tail.length > 400) tail.splice(0, tail.length - 400);
      };
    };
    child.stdout.on('data', keeper(process.stdout));
    child.stderr.on('data', keeper(process.stderr));
    child.on('close', (status, signal) => resolve({ status, signal, tail }));
  });
}

/** vitest's "Unhandled Errors" section (or the run's last lines when there is none), without colour codes. */
function unhandled(tail) {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: colour codes are control characters
  const plain = tail.map((l) => l.replace(/\x1b\[[0-9;]*m/g, '')).filter((l) => l.trim());
  const at = plain.findIndex((l) => /Unhandled (Error|Rejection)|Errors? ⎯|Error: /.test(l));
  return (at >= 0 ? plain.slice(at, at + 40) : plain.slice(-30)).map((l) => `    ${l.slice(0, 300)}`);
}

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

/**
 * `.venv/bin/python` with ./clients/python[test] installed, or null (the suite is skipped, loudly,
 * unless TEST_REQUIRE_PYTHON=1 makes that a failure). pip uses its cache (~/.cache/pip), so a second
 * clone installs without downloading.
 */
function preparePython() {
  const unavailable = (why) => {
    if (process.env.TEST_REQUIRE_PYTHON === '1') fail(`the Python client suite cannot run (TEST_REQUIRE_PYTHON=1): ${why}`);
    skipped.push(`Python client suite (clients/python): ${why}`);
    return null;
  };
  if (!has('python3')) return unavailable('python3 is not installed');
  const venv = join(process.cwd(), '.venv');
  const python = join(venv, 'bin', 'python');
  if (!existsSync(python)) {
    console.log('npm test: creating .venv/ for the Python suites (python3 -m venv .venv)');
    const made = spawnSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
    if (made.status !== 0) return unavailable('python3 -m venv failed (Debian: apt-get install python3-venv); remove .venv/ and retry');
  }
  const stamp = join(venv, 'tickhouse-client.sha256');
  const digest = clientDigest();
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== digest) {
    console.log("npm test: installing ./clients/python[test] into .venv/ (pip install './clients/python[test]')");
    const started = performance.now();
    const pip = spawnSync(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', './clients/python[test]'], { stdio: 'inherit' });
    if (pip.status !== 0) return unavailable("pip install './clients/python[test]' into .venv/ failed (PyPI unreachable?)");
    writeFileSync(stamp, digest);
    console.log(`npm test: .venv/ ready in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  return python;
}

/** A digest of what pip installs from clients/python (its pyproject and package sources). */
function clientDigest() {
  const root = join(process.cwd(), 'clients', 'python');
  const walk = (dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? (e.name === '__pycache__' ? [] : walk(join(dir, e.name))) : [join(dir, e.name)],
    );
  const hash = createHash('sha256');
  for (const file of [join(root, 'pyproject.toml'), join(root, 'README.md'), ...walk(join(root, 'src')).sort()]) {
    hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
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
