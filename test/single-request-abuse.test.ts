import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { freePort } from './support/global-setup.js';
import { rawRequest } from './support/raw-http.js';
import { type ServiceProcess, startService } from './support/service-process.js';

/**
 * Single requests an outside probe found to stop the service, make it unbounded or leak a key
 * (issue 24), each against the real process (`npm start`'s main.ts) with the demo dataset: after
 * each one the process still answers /healthz, and the answer is in the contract's shape.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-abuse-'));
let service: ServiceProcess;
let port: number;
let base: string;
/** The demo key (plan unlimited) and a new free account's key. */
let key: string;
let freeKey: string;
let assets: string[];

beforeAll(async () => {
  port = await freePort();
  service = startService({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info', DEMO_DATA: '1', DEMO_TICKS: '20000' });
  await service.serving();
  base = `http://127.0.0.1:${port}`;
  // The demo key is printed once the demo dataset is in.
  key = await until(() => /Local demo API key[^\n]*\n\s+(\S+)/.exec(service.output().stdout)?.[1]);
  const registered = await fetch(`${base}/v1/register`, { method: 'POST' });
  freeKey = (await registered.json()).data.api_key;
  const markets = await (await fetch(`${base}/v1/markets?limit=1000`)).json();
  assets = markets.data.map((m: { asset_id: string }) => m.asset_id);
}, 120_000);

afterAll(() => {
  service?.child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

async function until<T>(read: () => T | undefined | Promise<T | undefined>, ms = 60_000): Promise<T> {
  for (const started = Date.now(); Date.now() - started < ms; await new Promise((r) => setTimeout(r, 50))) {
    const value = await read();
    if (value !== undefined) return value;
  }
  throw new Error(`not there after ${ms} ms`);
}

/** Resident memory of a process, in MB (Linux). */
function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/** The process is alive and serving. */
async function healthy() {
  const res = await fetch(`${base}/healthz`);
  expect([res.status, await res.json()]).toEqual([200, { status: 'ok' }]);
  expect(service.child.exitCode).toBeNull();
}

const auth = (k: string) => ({ Authorization: `Bearer ${k}` });

describe('a WebSocket upgrade whose target or Host is not a URL', () => {
  it('target //: a path like any other (404, the contract shape), and the service stays up', async () => {
    const answer = await rawRequest(port, 'GET // HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
    expect([answer.status, JSON.parse(answer.body)]).toEqual([404, { detail: { message: 'Not found: GET //' } }]);
    await healthy();
  });

  it.each([
    ['Host "a b"', 'GET /v1/replay/market HTTP/1.1\r\nHost: a b\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'],
    ['Host "a/b"', 'GET /healthz HTTP/1.1\r\nHost: a/b\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'],
  ])('%s: 400 bad_request in the contract shape, and the service stays up', async (_name, bytes) => {
    const answer = await rawRequest(port, bytes);
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(JSON.parse(answer.body)).toEqual({ detail: { error: 'bad_request', message: expect.stringMatching(/^The request could not be read: /) } });
    await healthy();
  });
});

describe('a time parameter at the schema maximum', () => {
  it('a free key exporting ticks up to 8640000000000000 gets today’s ticks, and the service stays responsive', async () => {
    const today = Math.floor(Date.now() / 86_400_000) * 86_400_000;
    const res = await fetch(`${base}/v1/ticks/export?asset_id=${assets[0]}&start=${today}&end=8640000000000000`, {
      headers: auth(freeKey),
      signal: AbortSignal.timeout(30_000),
    });
    expect(res.status).toBe(200);
    const lines = (await res.text()).trimEnd().split('\n');
    expect(lines[0]).toBe('timestamp,event_type,side,best_bid,best_ask,price,size');
    expect(lines.length).toBeGreaterThan(1);
    await healthy();
  });

  it('a book export on a 1 ms grid up to 8640000000000000 stops at now + 1 minute: no rows are invented for the future', async () => {
    const requested = Date.now();
    const res = await fetch(`${base}/v1/orderbook/export?asset_id=${assets[0]}&start=${requested - 5_000}&end=8640000000000000&interval=1&depth=1`, {
      headers: auth(freeKey),
      signal: AbortSignal.timeout(60_000),
    });
    expect(res.status).toBe(200);
    const rows = (await res.text()).trimEnd().split('\n').slice(1);
    const last = Number(rows.at(-1)!.split(',')[0]);
    // The grid runs to the last instant data can have (the clock's now + 60 s): every ms, none after.
    expect(last).toBeGreaterThanOrEqual(requested + 60_000);
    expect(last).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(rows.length).toBe(last - Number(rows[0].split(',')[0]) + 1);
    await healthy();
  });
});

describe('a replay client that subscribes and unsubscribes without ever reading', () => {
  it('is no longer read once its replies pile up: its sends stall, and the server holds a bounded amount', { timeout: 120_000 }, async () => {
    const rssBefore = rssMb(service.child.pid!);
    const from = Date.now() - 3_600_000;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/replay/market?from=${from}&to=${Date.now()}&speed=1&key=${key}`);
    await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
    // Never read what the server sends.
    (ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const subscribe = JSON.stringify({ assets_ids: assets.slice(0, 24), operation: 'subscribe' });
    const unsubscribe = JSON.stringify({ assets_ids: assets.slice(0, 24), operation: 'unsubscribe' });
    ws.send(JSON.stringify({ assets_ids: [], type: 'market' }));
    // Each subscribe the server applies makes it send 24 books (tens of KB): a server that went on
    // reading us would queue them without end (issue 24: +237 MB for 19.6 MB sent). Paced a little,
    // so the server applies each message on its own rather than several that cancel out.
    for (let cycles = 0; cycles < 2_000; cycles++) {
      ws.send(subscribe);
      await new Promise((r) => setTimeout(r, 1));
      ws.send(unsubscribe);
      await new Promise((r) => setTimeout(r, 1));
    }
    // Whatever the server has read of it so far, what it holds for us stays bounded: about its 1 MiB
    // high-water mark plus one message of 24 books (it stops reading us there). Watched while it works.
    const metric = async (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(await (await fetch(`${base}/metrics`)).text())![1]);
    for (let i = 0; i < 40; i++) {
      expect(await metric('tickhouse_replay_unsent_bytes')).toBeLessThan(4 << 20);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(rssMb(service.child.pid!) - rssBefore).toBeLessThan(150);
    ws.terminate();
    await healthy();
  });
});

describe('keys in paths that do not route', () => {
  it.each(['//v1/clob/KEY/at/latest/book?token_id=1', '/V1/clob/KEY/at/latest/book?token_id=1', '/v1//clob/KEY/at/latest/book?token_id=1'])(
    '%s: neither the 404 body nor the log holds the key',
    async (path) => {
      const answer = await rawRequest(port, `GET ${path.replace('KEY', key)} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.body)).toEqual({ error: expect.stringContaining('<key>') });
      expect(answer.body).not.toContain(key);
      await until(() => (service.output().stdout.includes('"status":404') ? true : undefined));
      const logged = service
        .output()
        .stdout.split('\n')
        .filter((l) => l.startsWith('{'));
      expect(logged.join('\n')).not.toContain(key.slice(8));
    },
  );
});

describe('HTTP the router never sees, and paths that look like Polymarket’s base', () => {
  it('headers over 16 KiB: 431 header_too_large as JSON', async () => {
    const answer = await rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect([answer.status, answer.headers['content-type'], JSON.parse(answer.body)]).toEqual([
      431,
      'application/json',
      { detail: { error: 'header_too_large', message: 'The request headers are larger than 16 KiB.' } },
    ]);
    await healthy();
  });

  it('a Tardis replay slice naming 500 assets of 77 digits (a 43 KB request-target, as tardis-dev sends it) is served (issue 35)', async () => {
    const symbols = Array.from({ length: 500 }, (_, i) => `${'7'.repeat(72)}${String(i).padStart(5, '0')}`);
    symbols[0] = assets[0];
    const filters = encodeURIComponent(JSON.stringify([{ channel: 'book', symbols }]));
    const from = new Date(Date.now() - 3_600_000).toISOString().slice(0, 16);
    const target = `/v1/tardis/data-feeds/polymarket?from=${from}&filters=${filters}`;
    expect(target.length).toBeGreaterThan(43_000);
    const res = await fetch(`${base}${target}`, { headers: { ...auth(key), 'accept-encoding': 'gzip' } });
    expect([res.status, res.headers.get('x-slice-size')]).toEqual([200, '1']);
    await res.arrayBuffer();
  });

  it('a request line and headers over 64 KiB: 431 header_too_large as JSON', async () => {
    const answer = await rawRequest(port, `GET /healthz?q=${'a'.repeat(70_000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    expect([answer.status, JSON.parse(answer.body)]).toEqual([
      431,
      { detail: { error: 'header_too_large', message: 'The request line and headers are larger than 64 KiB (the headers alone may take 16 KiB).' } },
    ]);
    await healthy();
  });

  it.each([
    ['a request line that is not HTTP', 'GARBAGE\r\n\r\n'],
    ['a header without a colon', 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nnocolon\r\n\r\n'],
    ['a broken chunked body', 'POST /v1/register HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
  ])('%s: 400 bad_request as JSON', async (_name, bytes) => {
    const answer = await rawRequest(port, bytes);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({
      detail: { error: 'bad_request', message: expect.stringMatching(/^The request could not be read: malformed HTTP/) },
    });
    await healthy();
  });

  it.each([
    ['the same twice', 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n', false],
    ['two hosts', 'GET /v1/markets HTTP/1.1\r\nHost: localhost\r\nhost: evil.example\r\n\r\n', false],
    ['on a WebSocket handshake', 'GET /v1/replay/market HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n', false],
    ['under /v1/clob/', 'GET /v1/clob/k/at/latest/book?token_id=1 HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n', true],
  ])('two Host header lines (%s): 400 bad_request as JSON, with Connection: close (RFC 9112 §3.2; issue 35)', async (_name, bytes, clob) => {
    const answer = await rawRequest(port, bytes);
    const message = 'The request could not be read: the request has more than one Host header (RFC 9112 §3.2).';
    expect([answer.status, answer.headers['content-type'], answer.headers.connection]).toEqual([400, 'application/json', 'close']);
    expect(JSON.parse(answer.body)).toEqual(clob ? { error: message } : { detail: { error: 'bad_request', message } });
    await healthy();
  });

  it('HEAD on the replay route: 426 with the GET answer’s headers and, as HEAD requires, no body', async () => {
    const res = await fetch(`${base}/v1/replay/market?from=${Date.now() - 1000}&to=${Date.now()}`, { method: 'HEAD', headers: auth(key) });
    expect(res.status).toBe(426);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('upgrade')).toBe('websocket');
    expect(await res.text()).toBe('');
  });

  it.each(['/v1/clob//at/latest/book?token_id=1', '/v1/clob/./at/latest/book?token_id=1', '/v1/clob/KEY/at/latest/nope'])(
    '%s: Polymarket’s {"error"} shape',
    async (path) => {
      const answer = await rawRequest(port, `GET ${path.replace('KEY', key)} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
      expect(answer.status).toBe(404);
      expect(Object.keys(JSON.parse(answer.body))).toEqual(['error']);
    },
  );
});
