import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { errorText } from '../src/log.js';
import { documentText, openApiDocument } from './openapi-document.js';

/**
 * `npm run client:generate`: writes the live OpenAPI document to clients/typescript/openapi.json and
 * regenerates the typed TypeScript client in clients/typescript/src from it with the generator
 * pinned in clients/typescript/generator (installed on first use). `--out DIR` generates into
 * DIR instead and leaves the committed files alone (the staleness test compares the two).
 */
const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const CLIENT_DIR = join(ROOT, 'clients', 'typescript');
const GENERATOR = join(CLIENT_DIR, 'generator');

export function ensureGenerator(): string {
  const bin = join(GENERATOR, 'node_modules', '.bin', 'openapi-ts');
  if (!existsSync(bin)) {
    const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--prefix', GENERATOR], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('could not install the client generator (npm ci in clients/typescript/generator)');
  }
  return bin;
}

/** Runs the pinned generator on `documentFile` into `outDir` (replaced). */
export function generateClient(documentFile: string, outDir: string): void {
  const bin = ensureGenerator();
  rmSync(outDir, { recursive: true, force: true });
  const r = spawnSync(bin, ['-i', documentFile, '-o', outDir, '-c', '@hey-api/client-fetch', '--no-log-file', '--silent'], {
    stdio: 'inherit',
    cwd: GENERATOR,
  });
  if (r.status !== 0) throw new Error(`openapi-ts exited with ${r.status}`);
}

async function main() {
  const at = process.argv.indexOf('--out');
  const out = at > 0 ? resolve(process.argv[at + 1]) : join(CLIENT_DIR, 'src');
  const docFile = at > 0 ? join(out, '..', 'openapi.json') : join(CLIENT_DIR, 'openapi.json');
  mkdirSync(join(docFile, '..'), { recursive: true });
  writeFileSync(docFile, documentText(await openApiDocument()));
  generateClient(docFile, out);
  process.stderr.write(`client generated in ${out} from ${docFile}\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`generate-ts-client: ${errorText(err)}\n`);
    process.exit(1);
  });
}
