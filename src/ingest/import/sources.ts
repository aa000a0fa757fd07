import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Input files of `npm run import` (docs/INGEST.md §6): paths, directories (walked, sorted) and globs
 * (`*`, `?` in the last path segment; the shell usually expands them first), read plain, gzip or zstd
 * as a stream of decompressed chunks (../compressed-files.ts).
 */

/**
 * The files the arguments name, sorted by path within each argument, each once; `keep` chooses among
 * the files found in a directory (a file named outright is always taken).
 */
export async function expandInputs(inputs: readonly string[], keep: (name: string) => boolean = () => true): Promise<string[]> {
  const out: string[] = [];
  for (const input of inputs) {
    const name = basename(input);
    if (/[*?]/.test(name)) {
      const pattern = new RegExp(
        `^${name
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.')}$`,
      );
      const dir = dirname(input);
      const names = (await readdir(dir)).filter((n) => pattern.test(n)).sort();
      if (names.length === 0) throw new Error(`${input}: no file matches`);
      out.push(...names.map((n) => join(dir, n)));
    } else {
      const info = await stat(input).catch(() => {
        throw new Error(`cannot read ${input}`);
      });
      if (info.isDirectory()) out.push(...(await walk(input)).filter((f) => keep(basename(f))));
      // A device or a pipe has no size or end to plan from (/dev/zero never ends): only files are read.
      else if (!info.isFile()) throw new Error(`${input} is not a regular file`);
      else out.push(input);
    }
  }
  return [...new Set(out)];
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(path)));
    else if (entry.isFile() && !entry.name.startsWith('.')) out.push(path);
  }
  return out;
}
