import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { answerOf, errorOf, type McpService, startMcpService } from './support/mcp-service.js';

/**
 * The MCP endpoint under the API's keys and limits (docs/MCP.md §1, §4; docs/API.md §2): a free key
 * outside its window gets the window error, each tool call counts one data request toward the daily
 * limit (and its HTTP answer says so in X-RateLimit-*), and the endpoint's own HTTP answers are in the
 * contract's shape.
 */
const NOW = Date.UTC(2026, 5, 24, 15, 30);
const TODAY = Date.UTC(2026, 5, 24);
const NEXT_MIDNIGHT_S = String(Date.UTC(2026, 5, 25) / 1000);

let s: McpService;
let asset: string;

/** A token whose only trade came yesterday and whose book came today. */
const OLD_TRADE = '777';

beforeAll(async () => {
  s = await startMcpService(NOW, { ticks: 5000 });
  asset = s.top.asset_id;
  const frame = (t: number, extra: object) => JSON.stringify({ asset_id: OLD_TRADE, market: '0xold', timestamp: String(t), hash: 'h', ...extra });
  await replayLines(
    s.d.te.engine,
    [
      frame(TODAY - 7_200_000, { event_type: 'last_trade_price', price: '0.6', side: 'BUY', size: '1' }),
      frame(TODAY + 3_600_000, { event_type: 'book', bids: [{ price: '0.4', size: '10' }], asks: [{ price: '0.6', size: '5' }] }),
    ],
    { sourceId: 'old-trade' },
  );
}, 180_000);

afterAll(async () => {
  await s?.close();
});

const requestsToday = async (key: string) => (await s.v1('/v1/me', key)).body.data.requests_today as number;

it('a free key outside its window gets the REST API’s 403 body from every tool that reads history', async () => {
  const free = await s.d.keyFor('free');
  const mcp = await s.client(free);
  const yesterday = TODAY - 3_600_000;
  const cases: [string, Record<string, unknown>, string][] = [
    ['get_order_book', { asset_id: asset, timestamp: yesterday }, `/v1/orderbook?asset_id=${asset}&timestamp=${yesterday}`],
    ['get_price', { asset_id: asset, timestamp: yesterday }, `/v1/price?asset_id=${asset}&timestamp=${yesterday}`],
    [
      'get_execution_price',
      { asset_id: asset, side: 'BUY', amount: 5, timestamp: yesterday },
      `/v1/execution-price?asset_id=${asset}&side=BUY&amount=5&timestamp=${yesterday}`,
    ],
    ['get_candles', { asset_id: asset, start: yesterday }, `/v1/ohlcv?asset_id=${asset}&start=${yesterday}`],
    ['get_coverage', { asset_id: asset, start: yesterday, end: NOW }, `/v1/coverage?asset_id=${asset}&start=${yesterday}&end=${NOW}`],
    ['get_tick_summary', { asset_id: asset, start: yesterday, end: NOW }, `/v1/ticks?asset_id=${asset}&start=${yesterday}&end=${NOW}`],
    ['get_export_link', { dataset: 'ticks', asset_id: asset, start: yesterday, end: NOW }, `/v1/ticks/export?asset_id=${asset}&start=${yesterday}&end=${NOW}`],
    ['get_market', { asset_id: asset, timestamp: yesterday }, `/v1/clob/${free}/at/${yesterday}/book?token_id=${asset}`],
  ];
  const denied = {
    detail: {
      error: 'data_access_denied',
      message: 'Your plan (free) only allows access to the last 0 day(s) of data.',
      plan: 'free',
      earliest_allowed: '2026-06-24T00:00:00+00:00',
    },
  };
  for (const [name, args, path] of cases) {
    const rest = await s.v1(path, free);
    expect(rest.status, path).toBe(403);
    if (!path.startsWith('/v1/clob/')) expect(rest.body, path).toEqual(denied);
    expect(errorOf((await mcp.callTool({ name, arguments: args })) as never), name).toEqual({
      body: denied,
      meta: { 'tickhouse/error': 'data_access_denied', 'tickhouse/status': 403 },
    });
  }
  // A latest answer is about the time of its data: a last trade before the window is refused, as by the CLOB endpoint.
  expect((await s.v1(`/v1/clob/${free}/at/latest/last-trade-price?token_id=${OLD_TRADE}`, free)).status).toBe(403);
  expect(errorOf((await mcp.callTool({ name: 'get_market', arguments: { asset_id: OLD_TRADE } })) as never).body).toEqual(denied);
  // At an explicit instant in the window the answer is about that instant: the last trade before it, whenever it was (as the CLOB answers).
  const oldTrade = { timestamp: TODAY - 7_200_000, price: 0.6, side: 'BUY' };
  expect((await s.v1(`/v1/clob/${free}/at/${TODAY + 3_600_000}/last-trade-price?token_id=${OLD_TRADE}`, free)).body).toEqual({ price: '0.6', side: 'BUY' });
  const atInstant = { asset_id: OLD_TRADE, timestamp: TODAY + 3_600_000 };
  expect(answerOf((await mcp.callTool({ name: 'get_market', arguments: atInstant })) as never).last_trade).toEqual(oldTrade);
  const unlimited = await s.client();
  expect(answerOf((await unlimited.callTool({ name: 'get_market', arguments: { asset_id: OLD_TRADE } })) as never).last_trade).toEqual(oldTrade);
  await unlimited.close();
  // At the window's first instant the same key reads.
  expect(answerOf((await mcp.callTool({ name: 'get_tick_summary', arguments: { asset_id: asset, start: TODAY, end: NOW } })) as never).start).toBe(TODAY);
  await mcp.close();
});

describe('the daily limit counts tool calls', () => {
  let free: string;
  let mcp: Client;
  let last: Response | null = null;
  beforeAll(async () => {
    free = await s.d.keyFor('free');
    mcp = await s.client(free, (res) => {
      last = res;
    });
  });
  afterAll(async () => {
    await mcp?.close();
  });
  const price = () => mcp.callTool({ name: 'get_price', arguments: { asset_id: asset } });
  const header = (name: string) => last!.headers.get(name);

  it('initialize and tools/list count nothing and carry no X-RateLimit-*', async () => {
    await mcp.listTools();
    expect(header('x-ratelimit-limit')).toBeNull();
    expect(await requestsToday(free)).toBe(0);
  });

  it('calls 1-99 and a REST request share the counter, each answer saying where it stands; the 101st request is refused and not counted', async () => {
    for (let i = 1; i <= 99; i++) {
      answerOf((await price()) as never);
      expect([header('x-ratelimit-limit'), header('x-ratelimit-remaining'), header('x-ratelimit-reset')], `call ${i}`).toEqual([
        '100',
        String(100 - i),
        NEXT_MIDNIGHT_S,
      ]);
    }
    expect((await s.v1(`/v1/price?asset_id=${asset}`, free)).headers.get('x-ratelimit-remaining')).toBe('0');
    expect(await requestsToday(free)).toBe(100);

    const refused = errorOf((await price()) as never);
    const rest = await s.v1(`/v1/price?asset_id=${asset}`, free);
    expect(rest.status).toBe(429);
    expect(refused).toEqual({ body: rest.body, meta: { 'tickhouse/error': 'rate_limit_exceeded', 'tickhouse/status': 429 } });
    expect(refused.body).toEqual({ detail: { error: 'rate_limit_exceeded', message: 'Daily request limit (100) exceeded.', limit: 100, plan: 'free' } });
    expect([header('x-ratelimit-remaining'), header('retry-after')]).toEqual(['0', String(8.5 * 3600)]);
    expect(await requestsToday(free)).toBe(100);
    // A refused call runs nothing: not even its arguments are looked at.
    expect(errorOf((await mcp.callTool({ name: 'get_price', arguments: { asset_id: 'x' } })) as never).body.detail.error).toBe('rate_limit_exceeded');
  });

  it('the next UTC day counts afresh', async () => {
    s.d.clock.set(Date.UTC(2026, 5, 25, 0, 0, 1));
    try {
      const mcpTomorrow = await s.client(free, (res) => {
        last = res;
      });
      await mcpTomorrow.callTool({ name: 'get_market', arguments: { asset_id: asset } });
      expect([header('x-ratelimit-remaining'), header('retry-after')]).toEqual(['99', null]);
      await mcpTomorrow.close();
    } finally {
      s.d.clock.set(NOW);
    }
  });
});

describe('the endpoint’s own HTTP answers', () => {
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${s.origin}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.d.key}`, 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '8' } },
  };

  it('serves a client that sends no Accept (curl) with JSON', async () => {
    const res = await post(initialize);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-request-id')).toBeTruthy();
    const body = await res.json();
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-06-18', serverInfo: { name: 'tickhouse' } } });
    expect(body.result.instructions).toContain('search_markets');
    const called = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_price', arguments: { asset_id: asset } } });
    expect(called.headers.get('x-ratelimit-limit')).toBe('500000');
    expect((await called.json()).result.structuredContent).toEqual((await s.v1(`/v1/price?asset_id=${asset}`)).body.data);
    const notification = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect([notification.status, await notification.text()]).toEqual([202, '']);
  });

  it('tools/call whose arguments are not an object: JSON-RPC -32602 naming arguments, not counted (issue 35)', async () => {
    const before = await requestsToday(s.d.key);
    for (const args of [[asset], 'asset_id', 7, null]) {
      const res = await post({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'get_price', arguments: args } });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
      expect(await res.json()).toEqual({
        jsonrpc: '2.0',
        id: 9,
        error: {
          code: -32602,
          message: 'Invalid params: arguments must be an object of the tool’s arguments by name, e.g. {"asset_id": "…"}',
          data: { error: 'invalid_parameter', param: 'arguments' },
        },
      });
    }
    expect(await requestsToday(s.d.key)).toBe(before);
  });

  it('refuses in the contract’s shape: no key, GET/DELETE, no JSON-RPC, an unknown protocol version, a large body', async () => {
    const noKey = await fetch(`${s.origin}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(initialize) });
    expect([noKey.status, noKey.headers.get('www-authenticate'), (await noKey.json()).detail.error]).toEqual([401, 'Bearer', 'invalid_api_key']);
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${s.origin}/mcp`, { method, headers: { authorization: `Bearer ${s.d.key}`, accept: 'text/event-stream' } });
      expect([res.status, res.headers.get('allow')]).toEqual([405, 'POST']);
      expect(await res.json()).toEqual({
        detail: {
          error: 'method_not_allowed',
          message: 'The MCP endpoint takes POST only: it keeps no session, so there is no GET stream to open and none to DELETE.',
        },
      });
    }
    const notJson = await post('{"jsonrpc":');
    expect([notJson.status, await notJson.json()]).toEqual([
      400,
      { detail: { error: 'invalid_parameter', message: 'The request body must be a JSON object.', param: 'body' } },
    ]);
    const notRpc = await post({ jsonrpc: '1.0', id: 1, method: 'ping' });
    expect(notRpc.status).toBe(400);
    expect((await notRpc.json()).detail).toMatchObject({ error: 'invalid_parameter', param: 'jsonrpc' });
    const noMethod = await post({ jsonrpc: '2.0', id: 1 });
    expect([noMethod.status, await noMethod.json()]).toEqual([
      400,
      { detail: { error: 'invalid_parameter', message: 'Parse error: Invalid JSON-RPC message', param: 'body' } },
    ]);
    const batch = await post([initialize]);
    expect([batch.status, (await batch.json()).detail.param]).toEqual([400, 'body']);
    const version = await post(initialize, { 'mcp-protocol-version': '1999-01-01' });
    expect([version.status, (await version.json()).detail]).toEqual([
      400,
      {
        error: 'invalid_parameter',
        message: 'MCP-Protocol-Version must be one of 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, 2024-10-07',
        param: 'MCP-Protocol-Version',
      },
    ]);
    const large = await post({ ...initialize, params: { ...initialize.params, padding: 'x'.repeat(17 * 1024) } });
    expect([large.status, (await large.json()).detail.error]).toEqual([413, 'payload_too_large']);
  });
});
