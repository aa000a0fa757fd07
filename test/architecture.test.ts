import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles, fileGraph, folderGraph, type ImportGraph } from '../scripts/import-graph.js';

/**
 * The folders of src/ import each other in one direction only (issue 12): a cycle means two folders
 * can no longer be understood or changed apart. `npm run import-graph` prints the graph.
 */
/** Each cycle of `graph` as its edges, with the files behind them: what a failure prints. */
const cycleEdges = (graph: ImportGraph) =>
  cycles(graph).map((component) =>
    component.flatMap((from) =>
      [...graph.get(from)!].filter(([to]) => component.includes(to)).map(([to, files]) => `${from} -> ${to} (${[...new Set(files)].join(', ')})`),
    ),
  );

describe('import graphs of src/', () => {
  it('has no cycle between folders', () => {
    expect(cycleEdges(folderGraph())).toEqual([]);
  });

  it('has no cycle between files, type-only imports included', () => {
    expect(cycleEdges(fileGraph())).toEqual([]);
  });

  it('keeps storage, billing and the engine free of the HTTP layer', () => {
    const graph = folderGraph();
    for (const folder of ['accounts', 'billing', 'clickhouse', 'queries', 'book', 'ingest']) {
      expect([...(graph.get(folder)?.keys() ?? [])], folder).not.toContain('http');
    }
  });

  it('lets nothing but app.ts import a route file: a route holds its schema and handler, and what another door needs is a use case (issue 38)', () => {
    const importers: string[] = [];
    for (const [from, edges] of fileGraph()) {
      for (const to of edges.keys()) if (to.startsWith('routes/') && from !== 'app.ts') importers.push(`${from} -> ${to}`);
    }
    expect(importers).toEqual([]);
    // The check sees such an import: app.ts does import every route file.
    const routeFiles = readdirSync(new URL('../src/routes/', import.meta.url)).map((name) => `routes/${name}`);
    expect([...fileGraph().get('app.ts')!.keys()].filter((to) => to.startsWith('routes/')).sort()).toEqual(routeFiles.sort());
  });

  it('sees a cycle through any kind of import, type-only and dynamic ones included', () => {
    const src = mkdtempSync(join(tmpdir(), 'tickhouse-graph-'));
    try {
      mkdirSync(join(src, 'a'));
      mkdirSync(join(src, 'b'));
      mkdirSync(join(src, 'c'));
      writeFileSync(join(src, 'a', 'x.ts'), "import type { Y } from '../b/y.js';\nexport type X = Y;\n");
      writeFileSync(join(src, 'b', 'y.ts'), "export type Y = number;\nexport const z = () => import('../c/z.js');\n");
      writeFileSync(join(src, 'c', 'z.ts'), "export {\n  x,\n} from '../a/x.js';\nimport '../root.js';\n");
      writeFileSync(join(src, 'root.ts'), 'export {};\n');
      const graph = folderGraph(src);
      expect([...graph.get('c')!.keys()].sort()).toEqual(['a', 'root.ts']);
      expect(cycles(graph)).toEqual([['a', 'b', 'c']]);
      expect(cycles(fileGraph(src))).toEqual([['a/x.ts', 'b/y.ts', 'c/z.ts']]);
    } finally {
      rmSync(src, { recursive: true, force: true });
    }
  });
});

describe("the development guide's Layout", () => {
  const readme = readFileSync(new URL('../docs/guides/development.md', import.meta.url), 'utf8');
  const block = readme.slice(readme.indexOf('## Layout'));
  const fence = block.indexOf('```') + 3;
  const listed = [...block.slice(fence, block.indexOf('```', fence)).matchAll(/^(\S+)\s/gm)].map((m) => m[1]);
  const root = new URL('..', import.meta.url).pathname;

  it('names every folder of src/, and only paths that exist', () => {
    const folders = (dir: string): string[] =>
      readdirSync(`${root}${dir}`)
        .filter((name) => statSync(`${root}${dir}/${name}`).isDirectory())
        .flatMap((name) => [`${dir}/${name}/`, ...folders(`${dir}/${name}`)]);
    expect(folders('src').filter((f) => !listed.includes(f))).toEqual([]);
    expect(listed.filter((path) => !statSync(`${root}${path}`, { throwIfNoEntry: false }))).toEqual([]);
  });
});
