import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/global-setup.js';
import { type ServiceProcess, startService } from './support/service-process.js';

/**
 * Every fenced example of README.md, the guides in docs/guides/ and clients/python/README.md, extracted and run as printed against
 * a fresh quick-start service (demo data, the key it prints): `sh` blocks with bash and curl, `ts`
 * blocks with tsx (after tsc --strict has checked them), `js` blocks with node, each in a temporary
 * directory outside the repository holding what the README tells a reader to have there: the committed
 * TypeScript client copied to clients/typescript/src, and the npm packages it names (the repository's
 * node_modules, linked). `python` blocks run in the Python client's suite
 * (clients/python/tests/test_readme_snippets.py). A block this test neither runs nor names a reason
 * for fails it.
 *
 * Only what a reader fills in is filled in: the printed key for `th_live_...`, and this service's port
 * for 8080. The variables the quick start exports (TICKHOUSE_API_KEY, ASSET) carry over to the later
 * blocks, as in the reader's shell.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The README, its guides in the README's order, and the Python client's README. */
const GUIDES = [
  'api',
  'python',
  'typescript',
  'polymarket-clients',
  'replay',
  'tardis',
  'backtesting',
  'mcp',
  'import',
  'recorder',
  'operating',
  'threat-model',
  'development',
];
const FILES = ['README.md', ...GUIDES.map((g) => `docs/guides/${g}.md`), 'clients/python/README.md'];

interface Block {
  file: string;
  line: number;
  lang: string;
  code: string;
  /** The last `GET /v1/…` path the text names before the block: what a `json` block is an answer of. */
  endpoint?: string;
}

function blocksOf(file: string, text: string): Block[] {
  return [...text.matchAll(/^( *)```(\w+)\n([\s\S]*?)^\1```$/gm)].map((m) => ({
    file,
    line: text.slice(0, m.index).split('\n').length,
    lang: m[2],
    endpoint: [...text.slice(0, m.index).matchAll(/`GET (\/v1\/[a-z/-]+)/g)].at(-1)?.[1],
    // Indented blocks (inside a list item) lose their indentation.
    code: m[3]
      .split('\n')
      .map((l) => l.slice(m[1].length))
      .join('\n'),
  }));
}

/** Blocks not run here, each with the reason; matched by their first line. */
const NOT_RUN: [string, string][] = [
  ['npm install && npm start', 'starts the service: this test starts the same program (src/main.ts, demo data, first start)'],
  ['npm test', 'the test run itself'],
  ['pip install ./clients/python', 'npm test installs the client into .venv (scripts/test.mjs) before the Python suite runs the Python blocks'],
  ['# Replay raw frames', 'needs a capture file; npm run ingest and seed-demo are run by test/frame-files.test.ts and test/demo-frames.test.ts'],
  ['npm run record', "needs Polymarket's network; the recorder runs against local servers in test/recorder-*.test.ts"],
  ['{\n  "mcpServers"', "a desktop host's configuration file; test/mcp-stdio.test.ts runs `npm run -s mcp` as the host does"],
  ['# pmxt hourly Parquet', 'needs archive files; test/import-archives.test.ts and import-roundtrip.test.ts import every format from test/fixtures/archives'],
  ["pip install './clients/python[", 'npm test installs the client with its [test] extra (which holds [nautilus] and [hftbacktest]) into .venv'],
  [
    'npm run migrate',
    'operator commands on a store the running service holds, run by test/accounts-admin.test.ts and the bench; mixed-load starts a service of ' +
      'its own and runs for minutes (its runs are reported in issue 35)',
  ],
];
const reasonFor = (b: Block) => (b.lang === 'python' ? 'run by the Python suite' : NOT_RUN.find(([first]) => b.code.startsWith(first))?.[1]);
/** The members of an answer, nested objects' too (`fees.rate`), as a sorted list. */
const members = (value: unknown, prefix = ''): string[] =>
  value && typeof value === 'object' && !Array.isArray(value)
    ? Object.entries(value)
        .flatMap(([k, v]) => [`${prefix}${k}`, ...members(v, `${prefix}${k}.`)])
        .sort()
    : [];

const blocks = FILES.flatMap((file) => blocksOf(file, readFileSync(join(ROOT, file), 'utf8')));
const runnable = blocks.filter((b) => !reasonFor(b));
const label = (b: Block) => `${b.file}:${b.line} ${b.lang}: ${b.code.split('\n')[0].slice(0, 70)}`;

const dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-readme-'));
// Outside the repository: no package.json above it, as in a reader's own project directory.
const workDir = mkdtempSync(join(tmpdir(), 'tickhouse-readme-cwd-'));
let service: ServiceProcess;
let port: number;
let key: string;
/** What the reader's shell holds after the quick start's exports. */
let shellEnv: Record<string, string> = {};

beforeAll(async () => {
  port = await freePort();
  service = startService({ DATA_DIR: dataDir, PORT: String(port), DEMO_DATA: '1', DEMO_TICKS: '60000' });
  await service.serving();
  // The demo key is printed once the demo data is in.
  const deadline = Date.now() + 120_000;
  for (;;) {
    const printed = /Local demo API key.*\n\s+(\S+)/.exec(service.output().stdout);
    if (printed) {
      key = printed[1];
      break;
    }
    if (Date.now() > deadline) throw new Error(`no demo key printed:\n${service.output().stdout}\n${service.output().stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  cpSync(join(ROOT, 'clients/typescript/src'), join(workDir, 'clients/typescript/src'), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(workDir, 'node_modules'));
}, 180_000);

afterAll(async () => {
  service?.child.kill('SIGTERM');
  await service?.exited;
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(workDir, { recursive: true, force: true });
});

const asPrinted = (code: string) => code.replaceAll('localhost:8080', `127.0.0.1:${port}`);

function run(command: string, args: string[], env: Record<string, string> = {}) {
  return spawnSync(command, args, { cwd: workDir, encoding: 'utf8', timeout: 90_000, env: { ...process.env, ...shellEnv, ...env } });
}

describe('README examples', () => {
  it('every block is run here or names why not', () => {
    const listing = blocks.map((b) => `${reasonFor(b) ? 'not run' : 'run    '}  ${label(b)}${reasonFor(b) ? `  (${reasonFor(b)})` : ''}`);
    console.log(`README blocks:\n${listing.join('\n')}`);
    expect(blocks.filter((b) => !['sh', 'ts', 'js', 'python', 'json'].includes(b.lang)).map(label)).toEqual([]);
    expect(runnable.length).toBeGreaterThanOrEqual(6);
    expect(blocks.filter((b) => b.lang === 'python').length).toBeGreaterThanOrEqual(3);
  });

  it.each(runnable.map((b) => [label(b), b] as const))('%s', { timeout: 120_000 }, (_label, block) => {
    if (block.lang === 'sh') return runShell(block);
    if (block.lang === 'json') return compareAnswer(block);
    const file = join(workDir, `snippet-${block.line}.${block.lang === 'ts' ? 'mts' : 'mjs'}`);
    writeFileSync(file, asPrinted(block.code));
    if (block.lang === 'ts') {
      const tsc = run(join(ROOT, 'node_modules/.bin/tsc'), [
        ...['--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node'],
        file,
      ]);
      expect(tsc.stdout + tsc.stderr).toBe('');
    }
    const out = block.lang === 'ts' ? run(join(ROOT, 'node_modules/.bin/tsx'), [file]) : run(process.execPath, [file]);
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
    // It shows data: nothing undefined, no empty answer.
    expect(out.stdout.trim()).not.toBe('');
    expect(out.stdout).not.toMatch(/undefined|^\[\]$/m);
    if (block.code.includes('new WebSocket(')) {
      expect(out.stdout).toMatch(/^\[\{"event_type":"book"/);
      expect(out.stdout.trim().split('\n').length).toBeGreaterThan(2);
      expect(out.stdout.trim().split('\n').at(-1)).toBe('closed 1000 replay complete');
    } else {
      expect(out.stdout).toMatch(/best bid .*best ask /);
    }
  });
});

function runShell(block: Block) {
  const script = asPrinted(block.code).replace(/^export TICKHOUSE_API_KEY=th_live_\.\.\./m, `export TICKHOUSE_API_KEY=${key}`);
  expect(script).not.toMatch(/<[a-z _]+>|th_live_\.\.\./);
  const envFile = join(workDir, 'shell.env');
  // Any answer other than 2xx fails the block; each call is counted; the exports are kept for the next blocks.
  const wrapped =
    `set -eo pipefail\ncurl() { echo >> calls; command curl -sS --fail-with-body "$@"; }\n${script}\n` +
    `printf 'TICKHOUSE_API_KEY=%s\\nASSET=%s\\n' "$TICKHOUSE_API_KEY" "$ASSET" > ${envFile}\n`;
  rmSync(join(workDir, 'calls'), { force: true });
  const out = run('bash', ['-c', wrapped]);
  expect(out.stderr).toBe('');
  expect(out.status).toBe(0);
  expect(readFileSync(join(workDir, 'calls'), 'utf8').length).toBe(block.code.match(/\bcurl /g)!.length);
  if (/^export /m.test(block.code)) {
    shellEnv = Object.fromEntries(
      readFileSync(envFile, 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split('=') as [string, string]),
    );
    expect(shellEnv.TICKHOUSE_API_KEY).toBe(key);
    expect(shellEnv.ASSET).toMatch(/^\d{20,}$/);
  }
  if (block.code.includes('-o ticks.csv.zst')) expect(statSync(join(workDir, 'ticks.csv.zst')).size).toBeGreaterThan(100);
  if (block.code.includes('-o book.csv')) expect(readFileSync(join(workDir, 'book.csv'), 'utf8').split('\n').length).toBeGreaterThan(10);
  expect(existsSync(join(workDir, 'package.json'))).toBe(false);
}

/** A `json` block is an example answer of the endpoint the text names before it: it parses, and it has the members a real answer has. */
async function compareAnswer(block: Block) {
  expect(block.endpoint).toBeDefined();
  const example = JSON.parse(block.code);
  const url = `http://127.0.0.1:${port}${block.endpoint}?asset_id=${shellEnv.ASSET}`;
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  const { data } = (await res.json()) as { data: Record<string, unknown> };
  // A null member of the real answer (a demo token is open, with no winner) is an object in the example.
  const nullsOf = Object.keys(data).filter((k) => data[k] === null);
  expect(members(example).filter((m) => !nullsOf.includes(m.split('.')[0]) || !m.includes('.'))).toEqual(members(data));
}
