import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * References to the contract in docs/ — `docs/API.md`, `docs/API.md §6`, `docs/TIME-MACHINE.md
 * §1.3` — in code, README and the OpenAPI document, checked against the files: the file must exist,
 * a section `§N` must be a heading numbered N (`## 6. Errors`), and `§N.M` a heading numbered N.M or
 * item M of the numbered list in section N. `npm run doc-references` lists the broken ones.
 */
export interface DocReference {
  /** Where the reference is: a file path, or a name such as `openapi.json`. */
  where: string;
  line: number;
  text: string;
  /** Why it does not resolve; absent when it does. */
  broken?: string;
}

const REFERENCE = /docs\/([A-Za-z0-9_-]+\.md)(?: ?§ ?(\d+)(?:\.(\d+))?)?/g;

export function referencesIn(where: string, text: string, root: string): DocReference[] {
  const found: DocReference[] = [];
  text.split('\n').forEach((lineText, i) => {
    for (const m of lineText.matchAll(REFERENCE)) {
      found.push({ where, line: i + 1, text: m[0], broken: whyBroken(root, m[1], m[2], m[3]) });
    }
  });
  return found;
}

function whyBroken(root: string, file: string, section?: string, item?: string): string | undefined {
  const path = join(root, 'docs', file);
  if (!existsSync(path)) return `docs/${file} does not exist`;
  if (section === undefined) return undefined;
  const lines = readFileSync(path, 'utf8').split('\n');
  const start = lines.findIndex((l) => new RegExp(`^#+ ${section}\\.(\\s|$)`).test(l));
  if (start < 0) return `docs/${file} has no heading numbered ${section}`;
  if (item === undefined) return undefined;
  if (lines.some((l) => new RegExp(`^#+ ${section}\\.${item}[.\\s]`).test(l))) return undefined;
  const end = lines.findIndex((l, i) => i > start && /^#{1,2} /.test(l));
  const body = lines.slice(start + 1, end < 0 ? undefined : end);
  return body.some((l) => new RegExp(`^${item}\\. `).test(l))
    ? undefined
    : `docs/${file} §${section} has no heading ${section}.${item} nor a list item ${item}.`;
}
