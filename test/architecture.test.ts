import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles, folderGraph } from '../scripts/import-graph.js';

/**
 * The folders of src/ import each other in one direction only (issue 12): a cycle means two folders
 * can no longer be understood or changed apart. `npm run import-graph` prints the graph.
 */
describe('folder import graph of src/', () => {
  it('has no cycle', () => {
    const graph = folderGraph();
    const found = cycles(graph).map((component) =>
      component.flatMap((from) => [...graph.get(from)!].filter(([to]) => component.includes(to)).map(([to, files]) => `${from} -> ${to} (${[...new Set(files)].join(', ')})`)),
    );
    expect(found).toEqual([]);
  });

  it('keeps storage, billing and the engine free of the HTTP layer', () => {
    const graph = folderGraph();
    for (const folder of ['accounts', 'billing', 'clickhouse', 'queries', 'book', 'ingest']) {
      expect([...(graph.get(folder)?.keys() ?? [])], folder).not.toContain('http');
    }
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
    } finally {
      rmSync(src, { recursive: true, force: true });
    }
  });
});
