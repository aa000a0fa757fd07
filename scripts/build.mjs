#!/usr/bin/env node
// `npm run build`, also run before `npm start` and `npm run record` (prestart, prerecord): src/ compiled
// to dist/ by tsc (incremental: a second build with nothing changed takes about a second), and every
// other file under src/ copied beside its module (the dashboard's .js/.css/.html, which
// src/dashboard/serve.ts reads next to itself). Migrations need no copy: src/clickhouse/migrations.ts
// resolves ../../clickhouse, the repository's clickhouse/ from dist/clickhouse/ as from src/clickhouse/.
// Files in dist/ whose source is gone are removed, so dist/ mirrors src/.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');

let tsc;
try {
  tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
} catch {
  // An install without dev dependencies (npm ci --omit=dev) cannot compile: it runs what was built.
  if (existsSync(join(DIST, 'main.js'))) {
    console.warn('build: typescript is not installed (a production install); running the existing dist/');
    process.exit(0);
  }
  console.error('build: typescript is not installed and there is no dist/: run `npm install` (with dev dependencies) first');
  process.exit(1);
}

const compiled = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'inherit' });
if (compiled.status !== 0) {
  console.error(`build: tsc failed (${compiled.signal ?? `exit ${compiled.status}`})`);
  process.exit(1);
}

/** Every file under dir, as paths relative to it. */
function files(dir, base = dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name), base) : [relative(base, join(dir, e.name))]));
}

const sources = new Set(files(SRC));
for (const file of sources) {
  if (file.endsWith('.ts')) continue;
  const from = join(SRC, file);
  const to = join(DIST, file);
  const a = statSync(from);
  const b = existsSync(to) ? statSync(to) : null;
  if (b && b.size === a.size && b.mtimeMs >= a.mtimeMs) continue;
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
}
for (const file of files(DIST)) {
  if (file === '.tsbuildinfo') continue;
  const compiledFrom = file.endsWith('.js') ? file.replace(/\.js$/, '.ts') : null;
  if (!sources.has(file) && !(compiledFrom && sources.has(compiledFrom))) rmSync(join(DIST, file));
}
