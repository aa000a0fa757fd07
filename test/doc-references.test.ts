import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { referencesIn } from '../scripts/doc-references.js';
import { documentText, openApiDocument } from '../scripts/openapi-document.js';

/**
 * The contract lives in docs/: every reference to it — in code comments, the README, the Python
 * client, and the OpenAPI document the service serves — names a file and a section that exist.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const tracked = execFileSync('git', ['ls-files', 'src', 'scripts', 'test', 'clients/python', 'README.md', 'docs'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((f) => /\.(ts|mjs|js|py|md|json|toml|html|css)$/.test(f))
  // This file names broken references on purpose.
  .filter((f) => f !== 'test/doc-references.test.ts');

describe('references to docs/', () => {
  it('in the repository: every one resolves, and there are many', () => {
    const refs = tracked.flatMap((file) => referencesIn(file, readFileSync(`${ROOT}/${file}`, 'utf8'), ROOT));
    expect(refs.filter((r) => r.broken)).toEqual([]);
    expect(refs.length).toBeGreaterThan(100);
  });

  it('in the live /v1/openapi.json: every one resolves', async () => {
    // One line per JSON line: descriptions are one string each.
    const refs = referencesIn('openapi.json', documentText(await openApiDocument()), ROOT);
    expect(refs.filter((r) => r.broken)).toEqual([]);
    expect(refs.length).toBeGreaterThan(0);
  });

  it('sees a reference to a file or a section that is not there', () => {
    const refs = referencesIn('x.ts', '// docs/API.md §6, docs/API.md §9, docs/NOPE.md, docs/TIME-MACHINE.md §1.3, docs/TIME-MACHINE.md §1.9', ROOT);
    expect(refs.map((r) => [r.text, r.broken ?? 'ok'])).toEqual([
      ['docs/API.md §6', 'ok'],
      ['docs/API.md §9', 'docs/API.md has no heading numbered 9'],
      ['docs/NOPE.md', 'docs/NOPE.md does not exist'],
      ['docs/TIME-MACHINE.md §1.3', 'ok'],
      ['docs/TIME-MACHINE.md §1.9', 'docs/TIME-MACHINE.md §1 has no heading 1.9 nor a list item 9.'],
    ]);
  });

  it('nothing refers to the steering repository outside the clone', () => {
    const outside = tracked.filter((file) => readFileSync(`${ROOT}/${file}`, 'utf8').includes('../shared'));
    expect(outside).toEqual([]);
  });
});
