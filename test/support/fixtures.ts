import { fileURLToPath } from 'node:url';

/** Absolute path of a file under `test/fixtures/` (copies of real payloads; provenance in its README). */
export function fixturePath(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
}
