import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { documentText, openApiDocument } from '../scripts/openapi-document.js';

/** Issue 19: Redocly's recommended ruleset (redocly.yaml says which rules are off, and why) accepts the live document. */
it('redocly lint reports no error and no warning on /v1/openapi.json', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tickhouse-lint-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, documentText(await openApiDocument()));
    const r = spawnSync('node_modules/.bin/redocly', ['lint', file, '--config', 'redocly.yaml', '--format', 'summary'], { encoding: 'utf8' });
    const report = `${r.stdout}\n${r.stderr}`;
    expect(report).toMatch(/Woohoo! Your API description is valid/);
    expect(report).not.toMatch(/^(error|warning) /m);
    expect(r.status, report).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
