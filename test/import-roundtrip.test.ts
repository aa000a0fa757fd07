import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { planImport } from '../src/ingest/import/plan.js';
import { runImport } from '../src/ingest/import/run.js';
import { receiveTimePrefix } from '../src/ingest/receive-time.js';
import { generateFrames } from './support/book-frames.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { json } from './support/ticks-fixture.js';

/**
 * The frames round trip of docs/INGEST.md §6.1: a capture stored the way the recorder stores it (frames
 * stamped on arrival), exported as the recorder's frame archive, imported into an emptied store with
 * `import frames`: /v1/orderbook at 500 instants and /v1/ticks of the whole stream answer the same.
 * One chDB directory per process, so "a fresh instance" is the same store with every table truncated.
 */
let t: DataApp;
let dir: string;
const stream = generateFrames(2902, 4000);
const stamped = stream.lines.map((l, i) => `${receiveTimePrefix(stream.start * 1000 + i * 700 + 3)}${l}`);

beforeAll(async () => {
  t = await startDataApp(stream.end + 86_400_000);
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-roundtrip-'));
}, 60_000);

afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function answers(asset: string): Promise<{ books: unknown[]; ticks: unknown[] }> {
  const auth = { authorization: `Bearer ${t.key}` };
  const books: unknown[] = [];
  for (let i = 0; i < 500; i++) {
    const at = Math.round(stream.start - 1 + ((stream.end - stream.start + 2) * i) / 499);
    const res = await t.get(`/v1/orderbook?asset_id=${asset}&timestamp=${at}&limit=100`, auth);
    books.push(res.status === 404 ? 404 : (await json(res)).data);
  }
  const ticks = await json(
    await t.get(`/v1/ticks?asset_id=${asset}&start=${stream.start}&end=${stream.end + 1}&limit=100000&fields=book_side,taker_side,local_t`, auth),
  );
  expect(ticks.meta.next_cursor).toBe(null);
  return { books, ticks: ticks.data };
}

describe('frames round trip', () => {
  it('export as the frame archive, import into an emptied store: identical books at 500 instants and ticks', async () => {
    const live = await replayLines(t.te.engine, stamped, { sourceId: 'live-capture' });
    expect(live.normalizer.malformed).toBe(0);
    const [{ asset }] = await t.te.engine.rows<{ asset: string }>(
      'SELECT asset_id AS asset FROM ticks GROUP BY asset_id ORDER BY count() DESC, asset_id LIMIT 1',
    );
    const before = await answers(asset);
    expect(before.books.filter((b) => b !== 404).length).toBeGreaterThan(400);
    expect(before.ticks.length).toBeGreaterThan(1000);

    const archive = join(dir, 'archive.jsonl.gz');
    writeFileSync(archive, gzipSync(`${stamped.join('\n')}\n`));
    const tables = await t.te.engine.rows<{ name: string }>(
      `SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' AND name != 'schema_migrations'`,
    );
    for (const { name } of tables) await t.te.engine.command(`TRUNCATE TABLE ${name}`);
    expect(Number((await t.te.engine.rows<{ n: string }>('SELECT count() AS n FROM ticks'))[0].n)).toBe(0);
    // Nothing answers from a cache: the emptied store has no book.
    expect((await t.get(`/v1/orderbook?asset_id=${asset}&timestamp=${stream.end}`, { authorization: `Bearer ${t.key}` })).status).toBe(404);

    const summary = await runImport(t.te.engine, await planImport('frames', [archive]));
    expect(summary.problems).toBe(0);
    expect(await answers(asset)).toEqual(before);
  }, 900_000);
});
