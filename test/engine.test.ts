import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations, runMigrations } from '../src/clickhouse/migrations.js';
import { createTestEngine, TEST_BACKEND, type TestEngine } from './support/engine.js';
import { waitFor } from './support/wait.js';

let t: TestEngine;
beforeAll(async () => {
  t = await createTestEngine();
  await t.engine.command('CREATE TABLE big (n UInt64) ENGINE = MergeTree ORDER BY n');
  await t.engine.command('INSERT INTO big SELECT number FROM numbers(3000000)');
});
afterAll(() => t.close());

/**
 * Queries still running whose text contains `marker`: the engine's own list (visible across chDB
 * sessions), or with TEST_BACKEND=http what the ClickHouse HTTP server is executing.
 */
async function running(marker: string): Promise<number> {
  if (t.http) return t.http.runningQueries().filter((q) => q.includes(marker)).length;
  const rows = await t.engine.rows<{ n: string }>(
    "SELECT count() AS n FROM system.processes WHERE query LIKE {m:String} AND query NOT LIKE '%system.processes%'",
    { params: { m: `%${marker}%` } },
  );
  return Number(rows[0].n);
}

describe(`engine (${TEST_BACKEND})`, () => {
  it('binds parameters server-side, whatever they contain', async () => {
    const rows = await t.engine.rows<{ s: string; n: string; t: string }>(
      "SELECT {s:String} AS s, toString({n:Int64}) AS n, toString(fromUnixTimestamp64Milli({t:Int64}, 'UTC')) AS t",
      { params: { s: "it's; DROP TABLE big --", n: 1766481546487, t: 1766481546487 } },
    );
    expect(rows).toEqual([{ s: "it's; DROP TABLE big --", n: '1766481546487', t: '2025-12-23 09:19:06.487' }]);
  });

  it('round-trips any string as a parameter, and concurrent queries each see their own values', async () => {
    const nasty = "it's \\ back\\slash \ttab\nline '';-- \"q\" \u00e9\u{1F600} \\' \\N";
    const [row] = await t.engine.rows<{ s: string; a: string[] }>('SELECT {s:String} AS s, {a:Array(String)} AS a', {
      params: { s: nasty, a: [nasty, 'x'] },
    });
    expect(row).toEqual({ s: nasty, a: [nasty, 'x'] });
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => t.engine.rows<{ v: string }>('SELECT toString({v:UInt32} * 2) AS v', { params: { v: i } })),
    );
    expect(results.map((r) => Number(r[0].v))).toEqual(Array.from({ length: 40 }, (_, i) => i * 2));
  });

  it('returns compact rows as arrays in column order, named tuples as objects', async () => {
    const rows = await t.engine.compactRows(
      'SELECT number AS n, {s:String} AS s, [(0.5, 12.25)]::Array(Tuple(price Float64, size Float64)) AS levels FROM numbers(2) SETTINGS ' +
        'output_format_json_quote_64bit_integers = 0',
      { params: { s: 'a"b' } },
    );
    expect(rows).toEqual([
      [0, 'a"b', [{ price: 0.5, size: 12.25 }]],
      [1, 'a"b', [{ price: 0.5, size: 12.25 }]],
    ]);
  });

  it('runs every statement with SESSION_SETTINGS: 64-bit integers as JSON numbers, `/` as is', async () => {
    const sql = "SELECT toUInt64(9007199254740991) AS n, toInt64(-5) AS m, 'Yes/No' AS s";
    expect(await t.engine.rows(sql)).toEqual([{ n: 9007199254740991, m: -5, s: 'Yes/No' }]);
    expect(await t.engine.compactRows(sql)).toEqual([[9007199254740991, -5, 'Yes/No']]);
    const settings =
      "SELECT toUInt8(getSetting('output_format_json_quote_64bit_integers')) AS q, toUInt8(getSetting('output_format_json_escape_forward_slashes')) AS e";
    expect(await Promise.all(Array.from({ length: 8 }, () => t.engine.rows(settings)))).toEqual(Array.from({ length: 8 }, () => [{ q: 0, e: 0 }]));
    const chunks: Buffer[] = [];
    for await (const chunk of t.engine.stream(sql, 'JSONEachRow', { params: { unused: 1 } })) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('{"n":9007199254740991,"m":-5,"s":"Yes/No"}\n');
  });

  it('records each migration once', async () => {
    expect(await runMigrations(t.engine)).toEqual([]);
    const rows = await t.engine.rows<{ name: string }>('SELECT name FROM schema_migrations ORDER BY version');
    expect(rows.map((r) => r.name)).toEqual(loadMigrations().map((m) => m.name));
    expect(rows[0].name).toBe('001_ticks.sql');
  });

  it('runs concurrent queries side by side, not one after another behind one session', async () => {
    // Three queries that would sleep for a minute each: all three are seen running at once, then
    // stopped. Queued behind one another, the second would never show up beside the first.
    const slow = Promise.allSettled(
      [1, 2, 3].map((i) => t.engine.rows(`SELECT sleepEachRow(0.1) FROM numbers(600) SETTINGS max_block_size = 1 /* par-${i} */`)),
    );
    try {
      await waitFor(async () => (await running('/* par-')) === 3, 'three queries running at once');
    } finally {
      // The pattern is built so that the KILL's own text does not match it.
      await t.engine.command("KILL QUERY WHERE query LIKE concat('%/* p', 'ar-%') ASYNC");
    }
    expect((await slow).map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
  });

  it('streams a long result while other queries run, and the stream stays whole', async () => {
    const stream = t.engine.stream('SELECT n FROM big WHERE n >= {from:UInt64} ORDER BY n /* long-export */', 'CSV', { params: { from: 0 } });
    const it = stream[Symbol.asyncIterator]();
    const first = (await it.next()).value as Buffer;
    let bytes = first.length;
    // The export is open and paused: point queries still answer.
    for (let i = 0; i < 20; i++) {
      const [row] = await t.engine.rows<{ n: string }>('SELECT n FROM big WHERE n = {v:UInt64}', { params: { v: i * 1000 } });
      expect(Number(row.n)).toBe(i * 1000);
    }
    let last = first;
    for (let r = await it.next(); !r.done; r = await it.next()) {
      bytes += (r.value as Buffer).length;
      last = r.value as Buffer;
    }
    // Rows 0..2999999, one per line: every byte arrived despite the queries in between.
    let expected = 0;
    for (let n = 0; n < 3_000_000; n++) expected += String(n).length + 1;
    expect(bytes).toBe(expected);
    expect(last.toString().endsWith('2999999\n')).toBe(true);
  });

  it('cancels the engine query when the stream is destroyed', async () => {
    const stream = t.engine.stream('SELECT n FROM big AS b, numbers(100) AS x /* cancel-me */', 'CSV');
    await new Promise<void>((resolve) => stream.once('data', () => resolve()));
    expect(await running('cancel-me')).toBe(1);
    stream.destroy();
    // Held by back-pressure, a stream nobody cancels stays in the list for good.
    await waitFor(async () => (await running('cancel-me')) === 0, 'the query to leave the engine');
  });

  // Stop 34's CI: the embedded engine fetches one chunk ahead of its consumer; a query killed while
  // that fetch was in flight and the consumer held the chunk before it rejected the fetch with nobody
  // awaiting it yet: an unhandled rejection (the process guard logs and counts each as an uncaught
  // error). Blocks of 100 rows sleeping 10 ms each keep a fetch in flight for 1 s: the test waits
  // until the second chunk is buffered (the producer is then parked, its next fetch in flight), kills
  // the query, and gives the failure up to two more blocks to reach Node. Under load that bound can
  // only let a broken engine pass, never fail a sound one.
  it('a query killed while its consumer holds a chunk fails the next read, never as an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const track = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', track);
    try {
      const sql = 'SELECT number, sleepEachRow(0.01) FROM numbers(100000) SETTINGS max_block_size = 100 /* killed-while-held */';
      const stream = t.engine.stream(sql, 'CSV');
      const it = stream[Symbol.asyncIterator]();
      expect((await it.next()).done).toBe(false);
      await waitFor(() => stream.readableLength > 0, 'the second chunk to be buffered');
      await t.engine.command("KILL QUERY WHERE query LIKE '%killed-while-held%' AND query NOT LIKE '%KILL QUERY%' ASYNC");
      const blockEnds = Date.now() + 2_000;
      while (unhandled.length === 0 && Date.now() < blockEnds) await new Promise((resolve) => setTimeout(resolve, 50));
      let failure: unknown;
      try {
        for (let r = await it.next(); !r.done; r = await it.next());
      } catch (err) {
        failure = err;
      }
      expect(String(failure)).toMatch(/cancel/i);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', track);
    }
  });

  it('returns a bounded result whole as bytes, binary formats included, with bound parameters', async () => {
    const bytes = await t.engine.bytes('SELECT toUInt32(n) AS n, toString(n) AS s FROM big WHERE n < {to:UInt64} ORDER BY n', 'RowBinary', {
      params: { to: 3 },
    });
    // RowBinary: UInt32 little-endian, then the string as a varint length and its bytes.
    expect([...bytes]).toEqual([0, 0, 0, 0, 1, 48, 1, 0, 0, 0, 1, 49, 2, 0, 0, 0, 1, 50]);
  });

  it('bytes() with an aborted signal rejects without running', async () => {
    const abort = new AbortController();
    abort.abort();
    await expect(t.engine.bytes('SELECT 1 /* never-run */', 'RowBinary', { signal: abort.signal })).rejects.toThrow();
  });

  // chDB cannot interrupt a single-shot query (embedded bytes() waits for it): server only.
  it.runIf(TEST_BACKEND === 'http')('cancels the engine query of bytes() when its signal aborts', async () => {
    const abort = new AbortController();
    const result = t.engine.bytes('SELECT count() FROM big AS b, numbers(1000000) AS x /* cancel-bytes */', 'RowBinary', { signal: abort.signal });
    await waitFor(async () => (await running('cancel-bytes')) === 1, 'the query to run');
    abort.abort();
    await expect(result).rejects.toThrow();
    // 3·10¹² rows to count: gone within the generous wait means cancelled.
    await waitFor(async () => (await running('cancel-bytes')) === 0, 'the query to leave the engine');
  });

  it('reports an engine error that happens after the first bytes as a stream error', async () => {
    const stream = t.engine.stream("SELECT throwIf(n = 2500000, 'boom') AS x FROM big", 'CSV');
    const error = await new Promise<Error | null>((resolve) => {
      stream.on('data', () => {});
      stream.on('error', resolve);
      stream.on('end', () => resolve(null));
    });
    expect(error?.message).toMatch(/boom/);
  });
});

describe.runIf(TEST_BACKEND === 'embedded')('embedded data directory lock', () => {
  it('a second process on the same DATA_DIR exits with one clear line', () => {
    const r = spawnSync('node_modules/.bin/tsx', ['scripts/migrate.ts'], {
      env: { ...process.env, DATA_DIR: t.dataDir, CLICKHOUSE_URL: '' },
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^tickhouse: DATA_DIR ${t.dataDir} is locked by another tickhouse process \\(pid ${process.pid}\\)`));
  });
});
