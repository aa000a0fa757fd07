import { type IncomingHttpHeaders, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { hashApiKey } from '../src/auth/keys.js';
import { replayLines } from '../src/ingest/frame-files.js';
import { setLogLevel } from '../src/log.js';
import { metrics } from '../src/metrics.js';
import { utcDay } from '../src/time.js';
import { generateFrames } from './support/book-frames.js';
import { type ReplayService, startReplayService } from './support/replay-service.js';
import { waitFor } from './support/wait.js';

/**
 * The replay's handshake (docs/TIME-MACHINE.md §1 with docs/API.md §2, §6): validation, auth, the plan window
 * on `from` and the daily count run before the upgrade and fail as ordinary HTTP responses with the
 * contract's exact bodies; then the client protocol's PING and its 1008 closes; metrics and the log.
 */
const NOW = Date.UTC(2026, 5, 15, 12);
const MIDNIGHT = Date.UTC(2026, 5, 15);
let svc: ReplayService;

beforeAll(async () => {
  svc = await startReplayService(NOW);
  await replayLines(svc.te.engine, generateFrames(77, 200, MIDNIGHT + 1000).lines, { sourceId: 'replay-handshake' });
}, 60_000);

afterAll(() => svc?.close());

interface Refusal {
  status: number;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** A WebSocket handshake that the server must refuse: its status, headers and JSON body. */
function refused(query: Record<string, string | number>, headers: Record<string, string> = {}): Promise<Refusal> {
  const ws = new WebSocket(svc.replayUrl(query), { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => reject(new Error('the handshake was accepted')));
    ws.once('error', () => {});
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }));
    });
  });
}

/** An accepted handshake: the socket and the 101's headers. */
function accepted(query: Record<string, string | number>, headers: Record<string, string> = {}): Promise<{ ws: WebSocket; headers: IncomingHttpHeaders }> {
  const ws = new WebSocket(svc.replayUrl(query), { headers });
  return new Promise((resolve, reject) => {
    ws.once('upgrade', (res) => ws.once('open', () => resolve({ ws, headers: res.headers })));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
/** Heavy requests holding a slot in this process (the service runs in it): /metrics' gauge. */
const heavyRequestsHeld = () => Number(/^tickhouse_heavy_requests (\d+)$/m.exec(metrics.render())?.[1]);
const window = { from: MIDNIGHT, to: MIDNIGHT + 60_000 };
const invalid = (param: string, message: string) => ({ detail: { error: 'invalid_parameter', message, param } });

describe('handshake errors: ordinary HTTP responses, no upgrade', () => {
  it.each<[Record<string, string | number>, ReturnType<typeof invalid>]>([
    [{ to: 5 }, invalid('from', 'from is required; it must be an integer of Unix milliseconds (UTC), 0 or more')],
    [{ from: 5 }, invalid('to', 'to is required; it must be an integer of Unix milliseconds (UTC), 0 or more')],
    [{ from: '1.5', to: 5 }, invalid('from', 'from must be an integer of Unix milliseconds (UTC), 0 or more')],
    [{ from: 5, to: -1 }, invalid('to', 'to must be an integer of Unix milliseconds (UTC), 0 or more')],
    [{ from: 6, to: 5 }, invalid('from', 'from must be less than or equal to to')],
    ...['0', '-1', '10000.5', 'fast', '1e3', ''].map(
      (speed) =>
        [{ ...window, speed }, invalid('speed', 'speed must be a number greater than 0 and at most 10000, or max')] as [
          Record<string, string | number>,
          ReturnType<typeof invalid>,
        ],
    ),
  ])('%j → 400', async (query, body) => {
    const r = await refused(query, bearer(svc.key));
    expect(r.status).toBe(400);
    expect(r.body).toEqual(body);
    // Counted, like every data request that passed auth.
    expect(r.headers['x-ratelimit-limit']).toBe('500000');
  });

  it('401 without a key, with an unknown key (header or query), or a malformed one', async () => {
    const body = {
      detail: {
        error: 'invalid_api_key',
        message: 'A valid API key is required: send the header Authorization: Bearer <key> (get a key with POST /v1/register).',
      },
    };
    for (const [query, headers] of [
      [window, {}],
      [{ ...window, key: 'th_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, {}],
      [{ ...window, key: 'nope' }, {}],
      [window, bearer('th_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')],
      // A header, even a bad one, wins over `key`.
      [{ ...window, key: svc.key }, { authorization: 'Basic abc' }],
    ] as const) {
      const r = await refused(query, headers);
      expect(r.status).toBe(401);
      expect(r.body).toEqual(body);
      expect(r.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('403 when `from` is before the plan window (free: today only); exactly at the boundary is accepted', async () => {
    const free = await svc.keyFor('free');
    const r = await refused({ from: MIDNIGHT - 1, to: MIDNIGHT + 1000, key: free });
    expect(r.status).toBe(403);
    expect(r.body).toEqual({
      detail: {
        error: 'data_access_denied',
        message: 'Your plan (free) only allows access to the last 0 day(s) of data.',
        plan: 'free',
        earliest_allowed: '2026-06-15T00:00:00+00:00',
      },
    });
    const ok = await accepted({ from: MIDNIGHT, to: MIDNIGHT + 1000, key: free });
    ok.ws.close();
  });

  it('429 once the daily limit is used, with X-RateLimit-* and Retry-After; the refused request does not count', async () => {
    const key = await svc.keyFor('free');
    const account = (await svc.accounts.findByKeyHash(hashApiKey(key)))!;
    for (let i = 0; i < 99; i++) await svc.accounts.consumeDaily(account.id, utcDay(NOW), 100);
    // The 100th request of the day is still allowed (and upgrades).
    const last = await accepted({ ...window, key });
    expect(last.headers['x-ratelimit-remaining']).toBe('0');
    last.ws.close();
    // The replay holds the free plan's one heavy slot until its connection has ended.
    await waitFor(() => heavyRequestsHeld() === 0, 'the replay to end');
    const r = await refused({ ...window, key });
    expect(r.status).toBe(429);
    expect(r.body).toEqual({ detail: { error: 'rate_limit_exceeded', message: 'Daily request limit (100) exceeded.', limit: 100, plan: 'free' } });
    expect(r.headers['x-ratelimit-limit']).toBe('100');
    expect(r.headers['x-ratelimit-remaining']).toBe('0');
    expect(r.headers['x-ratelimit-reset']).toBe(String(Date.UTC(2026, 5, 16) / 1000));
    expect(r.headers['retry-after']).toBe(String(12 * 3600));
    const me = await (await svc.app.request('/v1/me', { headers: bearer(key) })).json();
    expect(me.data.requests_today).toBe(100);
  });

  it('a second replay of a free key while one runs: 429 too_many_concurrent_requests before the upgrade, not counted (issue 35)', async () => {
    const key = await svc.keyFor('free');
    const first = await accepted({ ...window, key });
    expect(first.headers['x-ratelimit-remaining']).toBe('99');
    const r = await refused({ ...window, key });
    expect(r.status).toBe(429);
    expect(r.body).toEqual({
      detail: {
        error: 'too_many_concurrent_requests',
        message: 'Your plan (free) runs 1 export, Tardis file or replay at a time: retry once the one running has ended.',
        limit: 1,
        plan: 'free',
      },
    });
    expect(r.headers['retry-after']).toBe('2');
    expect(r.headers['x-ratelimit-remaining']).toBeUndefined();
    first.ws.close();
    await waitFor(() => heavyRequestsHeld() === 0, 'the first replay to end');
    const next = await accepted({ ...window, key });
    expect(next.headers['x-ratelimit-remaining']).toBe('98');
    next.ws.close();
    await waitFor(() => heavyRequestsHeld() === 0, 'the replay to end');
  });

  it('a heavy request answered to HEAD (whose body the app drops) gives its slot back at once (issue 35)', async () => {
    const key = await svc.keyFor('free');
    const path = `/v1/ticks/export?asset_id=1001&start=${MIDNIGHT}&end=${MIDNIGHT + 60_000}`;
    for (let i = 0; i < 3; i++) {
      const res = await svc.app.request(path, { method: 'HEAD', headers: bearer(key) });
      expect(res.status).toBe(200);
    }
    // The same through the upgrade path (the replay server runs the app, then writes its answer).
    for (let i = 0; i < 2; i++) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(`${svc.httpUrl}${path}`, { method: 'HEAD', headers: { ...bearer(key), Connection: 'Upgrade', Upgrade: 'h2c' } });
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(200);
    }
    expect(heavyRequestsHeld()).toBe(0);
  });

  it('a plain GET (no upgrade) is 426 upgrade_required', async () => {
    const res = await fetch(`${svc.httpUrl}/v1/replay/market?from=${window.from}&to=${window.to}`, { headers: bearer(svc.key) });
    expect(res.status).toBe(426);
    expect(res.headers.get('upgrade')).toBe('websocket');
    expect(await res.json()).toEqual({
      detail: { error: 'upgrade_required', message: 'This endpoint is a WebSocket: connect with a WebSocket client (Upgrade: websocket).' },
    });
  });

  it('a request to another path with an Upgrade header (curl --http2 sends h2c) is answered as usual', async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${svc.httpUrl}/v1/ticks?asset_id=1001&start=${MIDNIGHT}&end=${MIDNIGHT + 86_400_000}&limit=2`, {
        headers: { ...bearer(svc.key), Connection: 'Upgrade, HTTP2-Settings', Upgrade: 'h2c', 'HTTP2-Settings': 'AAMAAABkAARAAAAAAAIAAAAA' },
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(200);
    const plain = await svc.get(`/v1/ticks?asset_id=1001&start=${MIDNIGHT}&end=${MIDNIGHT + 86_400_000}&limit=2`);
    expect(JSON.parse(body)).toEqual(await plain.json());
    expect(JSON.parse(body).data.length).toBe(2);
  });
});

describe('accepted handshakes', () => {
  it('switch protocols with X-Request-Id and X-RateLimit-*, count one request, and take the key as a query parameter', async () => {
    const key = await svc.keyFor('daily');
    for (const [query, headers] of [
      [{ ...window, key }, {}],
      [{ ...window, speed: 'max' }, bearer(key)],
      [{ ...window, speed: '10000' }, bearer(key)],
      [
        { ...window, speed: '0.5' },
        { ...bearer(key), 'x-request-id': 'replay-test-1' },
      ],
    ] as const) {
      const { ws, headers: h } = await accepted(query, headers);
      expect(h['x-ratelimit-limit']).toBe('1000');
      expect(h['x-request-id']).toBe('x-request-id' in headers ? 'replay-test-1' : h['x-request-id']);
      expect(h['x-request-id']).toBeTruthy();
      ws.close();
    }
    const me = await (await svc.app.request('/v1/me', { headers: bearer(key) })).json();
    expect(me.data.requests_today).toBe(4);
  });

  it('the access log shows the handshake as 101 and never the key', async () => {
    const lines: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    setLogLevel('info');
    try {
      const { ws } = await accepted({ ...window, key: svc.key });
      ws.close();
      await refused({ from: 'x', to: 1, key: svc.key });
    } finally {
      setLogLevel('silent');
      process.stdout.write = write;
    }
    const requests = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
    expect(requests.map((r) => [r.route, r.path, r.status])).toEqual([
      ['/v1/replay/market', '/v1/replay/market', 101],
      ['/v1/replay/market', '/v1/replay/market', 400],
    ]);
    expect(lines.join('')).not.toContain(svc.key);
  });
});

/** Opens a replay and collects its messages until it closes. */
async function session(query: Record<string, string | number>, send: (ws: WebSocket) => void) {
  const { ws } = await accepted({ ...query, key: svc.key });
  const messages: string[] = [];
  ws.on('message', (d) => messages.push(d.toString()));
  const closed = new Promise<[number, string]>((resolve) => ws.on('close', (code, reason) => resolve([code, reason.toString()])));
  send(ws);
  return { messages, close: await closed };
}

describe('client messages', () => {
  it('PING → PONG before any subscription; an empty subscription waits for assets', async () => {
    const subscribe1001 = JSON.stringify({ assets_ids: ['1001'], type: 'market' });
    // What a replay subscribed to 1001 from the start sends.
    const reference = await session({ ...window, speed: 'max' }, (ws) => ws.send(subscribe1001));
    const { ws } = await accepted({ ...window, speed: 'max', key: svc.key });
    const got: string[] = [];
    ws.on('message', (d) => got.push(d.toString()));
    const closed = new Promise<[number, string]>((resolve) => ws.on('close', (code, reason) => resolve([code, reason.toString()])));
    ws.send('PING');
    ws.send(JSON.stringify({ assets_ids: [], type: 'market' }));
    ws.send('PING');
    // The second PONG is sent as its PING is read, after the empty subscription was taken in; what
    // the server does about that subscription without reading the store is done before the next
    // client message is read. Then a real subscription.
    await waitFor(() => got.length >= 2, 'two PONGs');
    ws.send(subscribe1001);
    // The empty subscription sent nothing, started nothing and did not end the replay: two PONGs,
    // then exactly the replay subscribed from the start.
    expect(await closed).toEqual(reference.close);
    expect(got).toEqual(['PONG', 'PONG', ...reference.messages]);
  });

  it.each([
    ['not json', 'message is neither PING nor JSON'],
    ['[1]', 'message must be a JSON object'],
    ['{"assets_ids":"1001","type":"market"}', 'assets_ids must be an array of asset ids'],
    ['{"type":"market"}', 'assets_ids must be an array of asset ids'],
    ['{"assets_ids":["10a"],"type":"market"}', 'assets_ids must hold asset ids of 1-100 decimal digits'],
    ['{"assets_ids":["1001"],"type":"user"}', 'type must be "market" (or give an operation)'],
    ['{"assets_ids":["1001"],"operation":"resubscribe"}', 'operation must be "subscribe" or "unsubscribe"'],
    ['ping', 'message is neither PING nor JSON'],
  ])('%s → close 1008', async (text, reason) => {
    const r = await session({ ...window, speed: 'max' }, (ws) => ws.send(text));
    expect(r.close).toEqual([1008, reason]);
  });

  it('a binary message → close 1008', async () => {
    const r = await session({ ...window, speed: 'max' }, (ws) => ws.send(Buffer.from('PING')));
    expect(r.close).toEqual([1008, 'binary messages are not accepted']);
  });

  it('500 assets are accepted; a 501st (even in a later subscribe) closes with 1008', async () => {
    const ids = Array.from({ length: 500 }, (_, i) => String(5_000_000 + i));
    const ok = await session({ ...window, speed: 'max' }, (ws) => {
      ws.send(JSON.stringify({ assets_ids: ids.slice(0, 250), type: 'MARKET' }));
      ws.send(JSON.stringify({ assets_ids: ids.slice(250), operation: 'subscribe' }));
    });
    expect(ok.close).toEqual([1000, 'replay complete']);
    const tooMany = await session({ ...window, speed: 'max' }, (ws) => {
      ws.send(JSON.stringify({ assets_ids: ids, type: 'market' }));
      ws.send(JSON.stringify({ assets_ids: ['1'], operation: 'subscribe' }));
    });
    expect(tooMany.close).toEqual([1008, 'too many assets: at most 500 per connection']);
    // Unsubscribing makes room again.
    const room = await session({ ...window, speed: 'max' }, (ws) => {
      ws.send(JSON.stringify({ assets_ids: ids, type: 'market' }));
      ws.send(JSON.stringify({ assets_ids: [ids[0]], operation: 'unsubscribe' }));
      ws.send(JSON.stringify({ assets_ids: ['1'], operation: 'subscribe' }));
    });
    expect(room.close).toEqual([1000, 'replay complete']);
    // Some 1,500 book reads: 24 s alone on the HTTP backend here, over 60 s beside other suites on a
    // loaded 2-core machine. Nothing here is timed: the time-out only defines failure.
  }, 300_000);
});

describe('metrics', () => {
  const metric = async (name: string) => {
    const text = await (await svc.app.request('/metrics')).text();
    return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? '0');
  };

  it('counts open replays and the stored events sent', async () => {
    const before = await metric('tickhouse_replay_events_total');
    const { ws } = await accepted({ from: MIDNIGHT, to: MIDNIGHT + 86_400_000, speed: 'max', key: svc.key });
    expect(await metric('tickhouse_replay_open')).toBe(1);
    const got: string[] = [];
    ws.on('message', (d) => got.push(d.toString()));
    const closed = new Promise((r) => ws.on('close', r));
    ws.send(JSON.stringify({ assets_ids: ['1001', '2001'], type: 'market' }));
    await closed;
    const events = got.slice(1).reduce((n, text) => n + (JSON.parse(text).price_changes?.length ?? 1), 0);
    // Stored events: the ticks and the tick size changes (the other market events only go to a
    // subscription with custom_feature_enabled, docs/TIME-MACHINE.md §1).
    const stored = await svc.te.engine.rows<{ n: number }>(
      `SELECT (SELECT count() FROM ticks WHERE asset_id IN ('1001', '2001') AND t > fromUnixTimestamp64Milli(${MIDNIGHT})) +` +
        ` (SELECT count() FROM market_events WHERE event = 'tick_size_change' AND asset_id IN ('1001', '2001')` +
        ` AND t > fromUnixTimestamp64Milli(${MIDNIGHT})) AS n` +
        ' SETTINGS output_format_json_quote_64bit_integers = 0',
    );
    expect(events).toBe(stored[0].n);
    expect(await metric('tickhouse_replay_events_total')).toBe(before + events);
    // The session leaves the gauge once its loop has ended, just after the close.
    await waitFor(async () => (await metric('tickhouse_replay_open')) === 0, 'the open replay gauge to drop');
  });
});
