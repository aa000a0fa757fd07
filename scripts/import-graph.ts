import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The import graphs of src/ (`npm run import-graph`). Folder level: each folder directly under src/
 * is one node (`accounts`, `http`, ...), each file directly in src/ is its own node (`config.ts`).
 * File level: every file is a node. Type-only imports count: they tie the parts together just as
 * much. Prints every folder edge, then the cycles of either graph; exits 1 when there is one.
 */
export const SRC_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** `from` node → `to` node → the importing files (relative to src/). */
export type ImportGraph = Map<string, Map<string, string[]>>;

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s*['"]([^'"]+)['"]/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The folder node a file under `srcDir` belongs to. */
export function folderOf(srcDir: string, file: string): string {
  return relative(srcDir, file).split(sep)[0];
}

/** The file node of a file under `srcDir`: its path relative to it. */
export function fileOf(srcDir: string, file: string): string {
  return relative(srcDir, file);
}

export const folderGraph = (srcDir = SRC_DIR) => importGraph(srcDir, folderOf);
export const fileGraph = (srcDir = SRC_DIR) => importGraph(srcDir, fileOf);

function importGraph(srcDir: string, nodeOf: (srcDir: string, file: string) => string): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of sourceFiles(srcDir)) {
    const from = nodeOf(srcDir, file);
    if (!graph.has(from)) graph.set(from, new Map());
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const spec = m[1] ?? m[2] ?? m[3];
      if (!spec.startsWith('.')) continue;
      const target = resolve(dirname(file), spec);
      if (relative(srcDir, target).startsWith('..')) continue;
      const to = nodeOf(srcDir, target.replace(/\.js$/, '.ts'));
      if (to === from) continue;
      const edges = graph.get(from)!;
      edges.set(to, [...(edges.get(to) ?? []), relative(srcDir, file)]);
    }
  }
  return graph;
}

/** Strongly connected components with more than one node (Tarjan): each is a cycle. */
export function cycles(graph: ImportGraph): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    indices.set(node, index);
    low.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node)?.keys() ?? []) {
      if (!indices.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, indices.get(next)!));
    }
    if (low.get(node) === indices.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!indices.has(node)) visit(node);
  return found;
}

function main() {
  const folders = folderGraph();
  for (const from of [...folders.keys()].sort()) {
    const targets = [...folders.get(from)!.keys()].sort();
    process.stdout.write(`${from} -> ${targets.length ? targets.join(', ') : '(nothing)'}\n`);
  }
  const files = fileGraph();
  const edges = [...files.values()].reduce((n, to) => n + to.size, 0);
  process.stdout.write(`\nfiles: ${files.size}, imports between them: ${edges}\n`);
  const found = [...cycles(folders).map((c) => ({ c, graph: folders })), ...cycles(files).map((c) => ({ c, graph: files }))];
  if (!found.length) {
    process.stdout.write('\nno cycle, folders or files\n');
    return;
  }
  for (const { c: component, graph } of found) {
    process.stdout.write(`\ncycle: ${component.join(' <-> ')}\n`);
    for (const from of component) {
      for (const [to, importers] of graph.get(from)!)
        if (component.includes(to)) process.stdout.write(`  ${from} -> ${to}: ${[...new Set(importers)].join(', ')}\n`);
    }
  }
  process.exitCode = 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();
