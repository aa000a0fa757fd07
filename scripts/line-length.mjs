#!/usr/bin/env node
// The line limit of issue 25 (160 characters) where Biome's formatter cannot reach: long strings
// (SQL, OpenAPI descriptions) and comments. Part of `npm run lint`; exits 1 listing every longer line.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const LIMIT = 160;
const files = execFileSync('git', ['ls-files', 'src', 'scripts', 'test', '*.ts'], { encoding: 'utf8' })
  .split('\n')
  .filter((f) => /\.(ts|mts|js|mjs)$/.test(f) && !f.startsWith('test/fixtures/') && !f.startsWith('clients/'));
const long = files.flatMap((file) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line, i) => ([...line].length > LIMIT ? [`${file}:${i + 1}: ${[...line].length} characters`] : [])),
);
if (long.length) {
  process.stderr.write(`Lines over ${LIMIT} characters (split the string or the comment):\n${long.join('\n')}\n`);
  process.exit(1);
}
