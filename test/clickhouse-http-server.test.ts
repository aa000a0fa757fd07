import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { type ClickHouseClient, type ClickHouseClientConfigOptions, ClickHouseError, ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { Session } from 'chdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClickHouseHttpServer, startClickHouseHttpServer } from './support/clickhouse-http-server.js';
import { waitFor } from './support/wait.js';

let dataDir: string;
let server: ClickHouseHttpServer;
let client: ClickHouseClient;

/** A client of the server; failures are asserted, so the client does not also log them. */
function connect(options: ClickHouseClientConfigOptions = {}): ClickHouseClient {
  return createClient({ url: server.url, log: { level: ClickHouseLogLevel.OFF }, ...options });
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-chhttp-'));
  server = await startClickHouseHttpServer({ dataDir });
  client = connect();
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function rows<T>(query: string, query_params?: Record<string, unknown>, extra: object = {}): Promise<T[]> {
  const rs = await client.query({ query, query_params, format: 'JSONEachRow', ...extra });
  return rs.json<T>();
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** What the engine itself is running, seen from a session of our own. */
async function engineProcesses(): Promise<string[]> {
  const s = new Session(dataDir);
  try {
    const text = (await s.queryAsync("SELECT query FROM system.processes WHERE query NOT LIKE '%system.processes%'", { format: 'JSONEachRow' })).text();
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { query: string }).query);
  } finally {
    s.close();
  }
}

describe('ClickHouse HTTP interface on chDB', () => {
  it('answers ping, and GET /ping with Ok.', async () => {
    expect(await client.ping()).toEqual({ success: true });
    const res = await fetch(`${server.url}/ping`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('Ok.\n');
  });

  it('binds params server-side: strings with quotes and escapes, Int64, DateTime64, arrays, NULL', async () => {
    const tricky = `it's "quoted" \\ back\tslash\nnew line; DROP TABLE x --`;
    const result = await rows<Record<string, unknown>>(
      `SELECT {s:String} AS s, length({s:String}) AS len, {big:Int64} AS big, {neg:Int64} AS neg,
              {t:DateTime64(3, 'UTC')} AS t, {d:DateTime64(3, 'UTC')} AS d, {tags:Array(String)} AS tags,
              {missing:Nullable(String)} AS missing, {m:Map(String, UInt8)} AS m`,
      {
        s: tricky,
        big: '9223372036854775807',
        neg: -42,
        t: '2024-02-29 23:59:59.123',
        d: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678)),
        tags: ["o'neil", 'back\\slash', 'plain'],
        missing: null,
        m: new Map([
          ["k'1", 1],
          ['k\\2', 2],
        ]),
      },
    );
    expect(result).toEqual([
      {
        s: tricky,
        len: String(tricky.length),
        // A server quotes 64-bit integers in JSON (output_format_json_quote_64bit_integers = 1).
        big: '9223372036854775807',
        neg: '-42',
        t: '2024-02-29 23:59:59.123',
        d: '2024-01-02 03:04:05.678',
        tags: ["o'neil", 'back\\slash', 'plain'],
        missing: null,
        m: { "k'1": 1, 'k\\2': 2 },
      },
    ]);
  });

  it('moves long params to a multipart body and still binds them', async () => {
    const long = `${'x'.repeat(5000)}'`;
    const multipart = connect({ use_multipart_params: true });
    try {
      const rs = await multipart.query({
        query: 'SELECT length({v:String}) AS n, right({v:String}, 2) AS tail',
        query_params: { v: long },
        format: 'JSONEachRow',
      });
      expect(await rs.json()).toEqual([{ n: '5001', tail: "x'" }]);
    } finally {
      await multipart.close();
    }
  });

  it('runs DDL with command, inserts a JSONEachRow values array, reads it back', async () => {
    await client.command({
      query: `CREATE TABLE trades (id UInt32, asset String, t DateTime64(3, 'UTC'), price Float64)
              ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000`,
    });
    const res = await client.insert({
      table: 'trades',
      values: [
        { id: 1, asset: 'tok-a', t: '2024-05-01 10:00:00.250', price: 0.52 },
        { id: 2, asset: "tok-'b'", t: '2024-05-01 10:00:01.000', price: 0.48 },
      ],
      format: 'JSONEachRow',
    });
    expect(res.executed).toBe(true);
    expect(res.response_headers['x-clickhouse-query-id']).toBe(res.query_id);
    expect(await rows('SELECT * FROM trades ORDER BY id')).toEqual([
      { id: 1, asset: 'tok-a', t: '2024-05-01 10:00:00.250', price: 0.52 },
      { id: 2, asset: "tok-'b'", t: '2024-05-01 10:00:01.000', price: 0.48 },
    ]);
  });

  it('passes URL settings to the engine, and answers with ClickHouse headers', async () => {
    const rs = await client.query({
      query: "SELECT getSetting('max_threads') AS threads, getSetting('async_insert') AS async, getSetting('date_time_input_format') AS dt",
      format: 'JSONEachRow',
      clickhouse_settings: { max_threads: 3 },
      query_id: 'settings-query-1',
    });
    expect(await rs.json()).toEqual([{ threads: 3, async: false, dt: 'basic' }]);
    expect(rs.query_id).toBe('settings-query-1');
    expect(rs.response_headers['x-clickhouse-query-id']).toBe('settings-query-1');
    expect(rs.response_headers['x-clickhouse-format']).toBe('JSONEachRow');
    expect(rs.response_headers['x-clickhouse-timezone']).toBe('UTC');
    expect(JSON.parse(String(rs.response_headers['x-clickhouse-summary']))).toHaveProperty('read_rows');
    const unknown = await rejection(client.query({ query: 'SELECT 1', clickhouse_settings: { no_such_setting: 1 } as never }));
    expect(unknown).toBeInstanceOf(ClickHouseError);
    expect((unknown as ClickHouseError).code).toBe('115');
  });

  it('honours insert_deduplication_token', async () => {
    await client.command({
      query: `CREATE TABLE dedup (id UInt32, v String) ENGINE = MergeTree ORDER BY id
              SETTINGS non_replicated_deduplication_window = 1000`,
    });
    const insert = (token: string, values: object[]) =>
      client.insert({ table: 'dedup', values, format: 'JSONEachRow', clickhouse_settings: { insert_deduplication_token: token } });
    await insert('batch-1', [{ id: 1, v: 'a' }]);
    await insert('batch-1', [{ id: 2, v: 'retry of batch-1 with other rows' }]);
    await insert('batch-2', [{ id: 1, v: 'a' }]);
    expect(await rows('SELECT id, v FROM dedup ORDER BY id, v')).toEqual([
      { id: 1, v: 'a' },
      { id: 1, v: 'a' },
    ]);
  });

  it('streams a large exec result in chunks', async () => {
    const { stream, response_headers } = await client.exec({ query: 'SELECT number FROM numbers(5000000) FORMAT CSV' });
    expect(response_headers['x-clickhouse-format']).toBe('CSV');
    expect(response_headers['transfer-encoding']).toBe('chunked');
    let chunks = 0;
    let lines = 0;
    let tail = '';
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      chunks++;
      const text = tail + chunk.toString('utf8');
      const parts = text.split('\n');
      tail = parts.pop() ?? '';
      lines += parts.length;
      if (parts.length > 0 && lines === 5_000_000) expect(parts[parts.length - 1]).toBe('4999999');
    }
    expect(tail).toBe('');
    expect(lines).toBe(5_000_000);
    expect(chunks).toBeGreaterThan(10);
  });

  it('compresses request and response bodies when the client asks', async () => {
    const gzipClient = connect({ compression: { request: true, response: true } });
    try {
      await gzipClient.insert({ table: 'trades', values: [{ id: 3, asset: 'tok-c', t: '2024-05-02 00:00:00.000', price: 0.5 }], format: 'JSONEachRow' });
      const rs = await gzipClient.query({ query: 'SELECT id, asset FROM trades WHERE id = {id:UInt32}', query_params: { id: 3 }, format: 'JSONEachRow' });
      expect(rs.response_headers['content-encoding']).toBe('gzip');
      expect(await rs.json()).toEqual([{ id: 3, asset: 'tok-c' }]);
    } finally {
      await gzipClient.close();
    }
    const raw = await fetch(`${server.url}/?enable_http_compression=1`, {
      method: 'POST',
      body: 'SELECT 42 FORMAT CSV',
      headers: { 'Accept-Encoding': 'gzip' },
    });
    expect(raw.headers.get('content-encoding')).toBe('gzip');
    // fetch decodes gzip itself: the bytes it hands over are the engine's CSV.
    expect(await raw.text()).toBe('42\n');
  });

  it('raises ClickHouseError with the engine code, and the HTTP status ClickHouse uses', async () => {
    const missing = await rejection(client.query({ query: 'SELECT * FROM no_such_table', format: 'JSONEachRow' }));
    expect(missing).toBeInstanceOf(ClickHouseError);
    expect((missing as ClickHouseError).code).toBe('60');
    expect((missing as ClickHouseError).type).toBe('UNKNOWN_TABLE');
    const syntax = await rejection(client.command({ query: 'CREAT TABLE x (a UInt8) ENGINE = Memory' }));
    expect((syntax as ClickHouseError).code).toBe('62');
    const badParam = await rejection(client.query({ query: 'SELECT {n:UInt8} AS n', query_params: { n: 'abc' } }));
    expect((badParam as ClickHouseError).code).toBe('457');

    const res = await fetch(`${server.url}/?query=${encodeURIComponent('SELECT * FROM no_such_table')}`);
    expect(res.status).toBe(404);
    expect(res.headers.get('x-clickhouse-exception-code')).toBe('60');
    expect(await res.text()).toMatch(/^Code: 60\. DB::Exception: .*no_such_table.*\. \(UNKNOWN_TABLE\) \(version 26\.7\.2\.1\)\n$/s);
    const syntaxRes = await fetch(server.url, { method: 'POST', body: 'SELEC 1' });
    expect(syntaxRes.status).toBe(400);
  });

  it('fails a stream that breaks after the first bytes, never returning a short result', async () => {
    const query = 'SELECT number, throwIf(number = 300000) AS boom FROM numbers(500000)';
    const rs = await client.query({ query, format: 'JSONEachRow' });
    let seen = 0;
    const err = await rejection(
      (async () => {
        for await (const batch of rs.stream() as AsyncIterable<unknown[]>) seen += batch.length;
      })(),
    );
    expect(seen).toBeGreaterThan(0);
    expect(seen).toBeLessThan(300_001);
    expect(err).toBeInstanceOf(ClickHouseError);
    expect((err as ClickHouseError).code).toBe('395');

    const { stream } = await client.exec({ query: `${query} FORMAT CSV` });
    const execErr = await rejection(
      (async () => {
        for await (const _ of stream as AsyncIterable<Buffer>);
      })(),
    );
    expect(String(execErr)).toMatch(/aborted|ECONNRESET|premature|socket hang up/i);
  });

  // Both queries would run for minutes: gone from the engine's process list within the generous
  // wait means cancelled, whatever the machine's load.
  it('cancels the query when the client goes away before the first row', async () => {
    const abort = new AbortController();
    const query = 'SELECT sum(sleepEachRow(0.1)) FROM numbers(3000) SETTINGS max_block_size = 1 FORMAT CSV';
    const pending = client.exec({ query, abort_signal: abort.signal });
    await waitFor(() => server.runningQueries().includes(query), 'the query to run');
    expect((await engineProcesses()).some((q) => q.includes('sleepEachRow'))).toBe(true);
    abort.abort();
    await rejection(pending);
    await waitFor(
      async () => server.runningQueries().length === 0 && !(await engineProcesses()).some((q) => q.includes('sleepEachRow')),
      'the query to leave the engine',
    );
  });

  it('cancels the query when the client drops a stream it was reading', async () => {
    const query = 'SELECT number, sleepEachRow(0.001) FROM numbers(100000000) SETTINGS max_block_size = 100 FORMAT CSV';
    const { stream } = await client.exec({ query });
    for await (const _ of stream as AsyncIterable<Buffer>) break;
    (stream as Readable).destroy();
    await waitFor(
      async () => server.runningQueries().length === 0 && !(await engineProcesses()).some((q) => q.includes('numbers(100000000)')),
      'the query to leave the engine',
    );
  });

  it('runs in the database the client names', async () => {
    await client.command({ query: 'CREATE DATABASE IF NOT EXISTS other' });
    const other = connect({ database: 'other' });
    const missing = connect({ database: 'no_such_db' });
    try {
      expect(await (await other.query({ query: 'SELECT currentDatabase() AS db', format: 'JSONEachRow' })).json()).toEqual([{ db: 'other' }]);
      const err = await rejection(missing.query({ query: 'SELECT 1' }));
      expect((err as ClickHouseError).code).toBe('81');
    } finally {
      await other.close();
      await missing.close();
    }
  });

  it('simulates an outage: connections reset while unavailable, served again afterwards', async () => {
    server.setUnavailable(true);
    try {
      expect((await client.ping()).success).toBe(false);
      const err = await rejection(client.query({ query: 'SELECT 1' }));
      expect(String((err as { code?: string }).code ?? err)).toMatch(/ECONNRESET|socket hang up/i);
    } finally {
      server.setUnavailable(false);
    }
    expect(await rows('SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });
});
