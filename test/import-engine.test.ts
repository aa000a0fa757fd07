import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARCHIVE_HOUR, type ArchiveHour, ensureArchiveHour } from '../scripts/bench/archive-hour.js';
import { planImport } from '../src/ingest/import/plan.js';
import { runImport } from '../src/ingest/import/run.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { json } from './support/ticks-fixture.js';

/**
 * Issue 36's "Must show": one generated pmxt hour (scripts/bench/archive-hour.ts: every kind of event,
 * books that verify and books that drift, changes that state no best bid/ask) imported through the
 * engine path (`import pmxt`) and through the normalizer — its rows as the WebSocket frames pmxt's
 * docs say they record (docs/INGEST.md §6.2), with the hour's capture records (§6.4), imported as a
 * recorder archive — answers the same: /v1/orderbook at 500 instants of the busiest asset and 100 of
 * four others, /v1/ticks with every field, /v1/coverage (drift checks included), and the stored
 * snapshots and market events. The busiest asset's Tardis day from the same generator gives the same
 * books. One chDB directory per process: "a fresh store" is the same store with its tables truncated.
 */
const H = ARCHIVE_HOUR;
let t: DataApp;
let dir: string;
let hour: ArchiveHour;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-import-engine-'));
  hour = await ensureArchiveHour(dir, { rows: 24_000, tokens: 40, allFrames: true });
  t = await startDataApp(H + 2 * 86_400_000);
}, 120_000);

afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

const auth = () => ({ authorization: `Bearer ${t.key}` });

async function truncateAll(): Promise<void> {
  const tables = await t.te.engine.rows<{ name: string }>(
    `SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' AND name != 'schema_migrations'`,
  );
  for (const { name } of tables) await t.te.engine.command(`TRUNCATE TABLE ${name}`);
}

/** The hour as a recorder's archive: its capture records (docs/TIME-MACHINE.md §4), then every frame. */
function referenceArchive(): string {
  const frames = readFileSync(hour.allFrames!, 'utf8').trimEnd().split('\n');
  const assets = new Set<string>();
  for (const line of frames) {
    const e = JSON.parse(line.slice(29));
    assets.add(e.asset_id ?? e.price_changes[0].asset_id);
  }
  const record = (kind: string, at: number, socket: number, list: string[]) =>
    JSON.stringify({ event_type: 'tickhouse_capture', kind, t: at, run: 'reference', socket, assets: list });
  const list = [...assets].sort();
  const lines = [record('start', H, 0, []), record('subscribe', H, 1, list), record('open', H, 1, list), ...frames, record('stop', H + 3_600_000, 0, [])];
  const path = join(dir, 'reference.jsonl');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

interface Answers {
  books: Record<string, unknown[]>;
  ticks: Record<string, unknown[]>;
  coverage: Record<string, unknown>;
  snapshots: unknown[];
  marketEvents: unknown[];
}

async function answers(assets: string[]): Promise<Answers> {
  const out: Answers = { books: {}, ticks: {}, coverage: {}, snapshots: [], marketEvents: [] };
  for (const [i, asset] of assets.entries()) {
    const count = i === 0 ? 500 : 100;
    const books: unknown[] = [];
    for (let k = 0; k < count; k++) {
      const at = Math.round(H - 100 + ((3_600_000 + 1200) * k) / (count - 1));
      const res = await t.get(`/v1/orderbook?asset_id=${asset}&timestamp=${at}&limit=100`, auth());
      books.push(res.status === 404 ? 404 : (await json(res)).data);
    }
    out.books[asset] = books;
    const ticks = await json(
      await t.get(`/v1/ticks?asset_id=${asset}&start=${H - 60_000}&end=${H + 3_660_000}&limit=100000&fields=book_side,taker_side,local_t`, auth()),
    );
    expect(ticks.meta.next_cursor).toBe(null);
    out.ticks[asset] = ticks.data;
    out.coverage[asset] = (await json(await t.get(`/v1/coverage?asset_id=${asset}&start=${H - 3_600_000}&end=${H + 7_200_000}`, auth()))).data;
  }
  // What no route shows whole: every snapshot (exchange books and checkpoints) and market event, but seq
  // (each import numbers its own arrivals; the order it gives is in the answers above).
  out.snapshots = await t.te.engine.rows(
    `SELECT asset_id, toString(t) AS t, is_checkpoint, market, bids, asks, toString(local_t) AS local_t FROM book_snapshots
     ORDER BY asset_id, t, is_checkpoint, local_t, toString(bids), toString(asks)`,
  );
  out.marketEvents = await t.te.engine.rows(
    `SELECT asset_id, toString(t) AS t, toString(local_t) AS local_t, toString(event) AS event, market, old_tick_size, new_tick_size, raw
     FROM market_events ORDER BY asset_id, t`,
  );
  return out;
}

describe('the engine path against the normalizer', () => {
  it('a generated pmxt hour: the same books at 600 instants, ticks, coverage, snapshots and market events', async () => {
    expect(hour.rows).toBeGreaterThan(20_000);
    expect(hour.events.book).toBeGreaterThan(40);
    expect(hour.events.last_trade_price).toBeGreaterThan(0);
    expect(hour.events.tick_size_change).toBeGreaterThan(0);

    const reference = await runImport(t.te.engine, await planImport('recorder', [referenceArchive()]));
    expect(reference.problems).toBe(0);
    const ranked = await t.te.engine.rows<{ asset_id: string }>('SELECT asset_id FROM ticks GROUP BY asset_id ORDER BY count() DESC, asset_id');
    const others = ranked.map((r) => r.asset_id).filter((a) => a !== hour.busyAsset);
    const assets = [hour.busyAsset, others[0], others[1], others[2], others.at(-1)!];
    // The busiest asset has a tick size change (the generator gives it one).
    expect((await t.te.engine.rows('SELECT 1 FROM market_events WHERE asset_id = {a:String}', { params: { a: hour.busyAsset } })).length).toBe(1);
    const before = await answers(assets);
    // The comparison has something to compare: books at most instants, drift checks of both verdicts.
    expect(before.books[hour.busyAsset].filter((b) => b !== 404).length).toBeGreaterThan(450);
    expect(before.ticks[hour.busyAsset].length).toBeGreaterThan(1000);
    const checks = await t.te.engine.rows<{ verdict: string; n: string }>(
      'SELECT toString(verdict) AS verdict, count() AS n FROM book_checks GROUP BY verdict',
    );
    expect(checks.map((c) => c.verdict).sort()).toEqual(['drifted', 'unchecked', 'verified']);
    expect(before.marketEvents.length).toBe(hour.events.tick_size_change);

    await truncateAll();
    const engine = await runImport(t.te.engine, await planImport('pmxt', [hour.pmxt]));
    expect(engine.problems).toBe(0);
    expect(engine.events).toBe(hour.rows);
    const after = await answers(assets);
    expect(after.books).toEqual(before.books);
    expect(after.ticks).toEqual(before.ticks);
    // Coverage answers the same but for which import stored the events (the same count of them).
    type Imports = { imports: { events: number; format: string; unit: string }[] };
    const sansImports = (c: Record<string, unknown>) => Object.fromEntries(Object.entries(c).map(([a, v]) => [a, { ...(v as object), imports: undefined }]));
    expect(sansImports(after.coverage)).toEqual(sansImports(before.coverage));
    for (const asset of assets) {
      const [was, is] = [before, after].map((a) => (a.coverage[asset] as Imports).imports);
      expect(is.map((i) => [i.format, i.unit, i.events])).toEqual([['pmxt', 'pmxt:2026-09-01T12', was[0].events]]);
      expect(was.map((i) => i.format)).toEqual(['recorder']);
    }
    expect(after.snapshots).toEqual(before.snapshots);
    expect(after.marketEvents).toEqual(before.marketEvents);

    // The same token's Tardis day (incremental_book_L2 + trades): the same books.
    await truncateAll();
    const tardis = await runImport(t.te.engine, await planImport('tardis', hour.tardis));
    expect(tardis.problems).toBe(0);
    const levels = (books: unknown[]) => books.map((b) => (b === 404 ? 404 : { bids: (b as { bids: unknown }).bids, asks: (b as { asks: unknown }).asks }));
    expect(levels((await answers([hour.busyAsset])).books[hour.busyAsset])).toEqual(levels(before.books[hour.busyAsset]));
  }, 600_000);

  it('a pmxt v1 hour (data JSON, levels as JSON text or as Python repr) answers as the same events in a v2 file', async () => {
    // Both files written by the engine from the generated v2 hour, in its row order: its books and price
    // changes (v1 has no trades nor tick size changes), as v2 rows and as v1 rows (archive.pmxt.dev: v1
    // `data` holds token_id, the levels of a book_snapshot, change_price/size/side and the best bid/ask).
    const name = 'polymarket_orderbook_2026-09-01T12.parquet';
    const [v1, v2] = [join(dir, 'v1', name), join(dir, 'v2-subset', name)];
    const from = `file({src:String}, Parquet) WHERE event_type IN ('book', 'price_change') SETTINGS max_threads = 1, input_format_parquet_preserve_order = 1`;
    await t.te.engine.command(`INSERT INTO FUNCTION file({dst:String}, Parquet) SELECT * FROM ${from}`, { params: { src: hour.pmxt, dst: v2 } });
    const text = (x: string) => `toJSONString(toString(${x}))`;
    // One book in two lists its levels as Python's repr wrote them: a string with single quotes.
    const levels = (x: string) => `if(cityHash64(asset_id, timestamp_received) % 2 = 0, ${x}, toJSONString(replaceAll(${x}, '"', '''')))`;
    await t.te.engine.command(
      `INSERT INTO FUNCTION file({dst:String}, Parquet,
         'timestamp_received DateTime64(3, \\'UTC\\'), timestamp_created_at DateTime64(3, \\'UTC\\'), market_id String, update_type String, data String')
       SELECT timestamp_received, assumeNotNull(timestamp), toString(market), if(event_type = 'book', 'book_snapshot', 'price_change'),
         if(event_type = 'book',
            concat('{"token_id":', toJSONString(asset_id), ',"bids":', ${levels('assumeNotNull(bids)')}, ',"asks":', ${levels('assumeNotNull(asks)')}, '}'),
            concat('{"token_id":', toJSONString(asset_id), ',"change_price":', ${text('price')}, ',"change_size":', ${text('size')},
                   ',"change_side":', toJSONString(lower(assumeNotNull(side))),
                   if(best_bid IS NULL, '', concat(',"best_bid":', ${text('best_bid')})),
                   if(best_ask IS NULL, '', concat(',"best_ask":', ${text('best_ask')})), '}'))
       FROM ${from}`,
      { params: { src: hour.pmxt, dst: v1 } },
    );
    const assets = [
      hour.busyAsset,
      ...(
        await t.te.engine.rows<{ a: string }>(`SELECT asset_id AS a FROM file({src:String}, Parquet) GROUP BY a ORDER BY count() DESC, a LIMIT 3 OFFSET 1`, {
          params: { src: v2 },
        })
      ).map((r) => r.a),
    ];
    const importOf = async (path: string) => {
      await truncateAll();
      const summary = await runImport(t.te.engine, await planImport('pmxt', [path]));
      expect(summary.problems).toBe(0);
      const a = await answers(assets);
      // Which run imported it, and when, aside.
      for (const c of Object.values(a.coverage) as { imports: { imported_at?: number }[] }[]) for (const i of c.imports) delete i.imported_at;
      return { summary, a };
    };
    const reference = await importOf(v2);
    const [{ rows }] = await t.te.engine.rows<{ rows: string }>(`SELECT count() AS rows FROM file({src:String}, Parquet)`, { params: { src: v1 } });
    expect(reference.summary.events).toBe(Number(rows));
    expect(reference.a.books[hour.busyAsset].filter((b) => b !== 404).length).toBeGreaterThan(450);
    const fromV1 = await importOf(v1);
    expect(fromV1.summary.events).toBe(reference.summary.events);
    expect(fromV1.summary.rows).toEqual(reference.summary.rows);
    expect(fromV1.a).toEqual(reference.a);
  }, 300_000);
});
