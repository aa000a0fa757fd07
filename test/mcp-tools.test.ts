import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { answerOf, errorOf, type McpService, startMcpService } from './support/mcp-service.js';

/**
 * The MCP tools (docs/MCP.md §3) through the SDK's own Client over streamable HTTP, each answer
 * compared with the `/v1` endpoint it stands for at the same instants and ranges (or with a model
 * written from the spec where no endpoint exists: the tick summary), on the demo dataset.
 */
const NOW = Date.UTC(2026, 5, 24, 15, 30);
// Each test compares dozens of calls with their /v1 answers; on 2 shared cores with the server engine they outlast the default minute.
vi.setConfig({ testTimeout: 180_000 });
const TOOL_NAMES = [
  'search_markets',
  'get_market',
  'get_order_book',
  'get_price',
  'get_execution_price',
  'get_candles',
  'get_tick_summary',
  'get_coverage',
  'get_export_link',
];

let s: McpService;
let mcp: Client;
let asset: string;
/** Instants around the top asset's history: before its first tick, at and 1 ms before ticks, in bursts, and after the last. */
let instants: number[];

beforeAll(async () => {
  s = await startMcpService(NOW, { reconnects: 130 });
  asset = s.top.asset_id;
  mcp = await s.client();
  const ticks: { t: number }[] = (await s.v1(`/v1/ticks?asset_id=${asset}&start=${s.top.first}&end=${s.top.last}&limit=3000`)).body.data;
  const burst = ticks.find((t, i) => i > 0 && ticks[i - 1].t === t.t)!.t;
  const picks = [0.1, 0.37, 0.5, 0.83, 0.99].map((f) => ticks[Math.floor(f * (ticks.length - 1))].t);
  instants = [s.top.first - 1, s.top.first, burst - 1, burst, ...picks, ...picks.map((t) => t - 1), s.top.last, s.top.last + 5000];
}, 180_000);

afterAll(async () => {
  await mcp?.close();
  await s?.close();
});

const call = (name: string, args: Record<string, unknown>) => mcp.callTool({ name, arguments: args });
const requestsToday = async () => (await s.v1('/v1/me')).body.data.requests_today as number;

/** A tool's answer equals the `/v1` body: its data (as `shape` builds it) on 200, the same error body on a refusal. */
async function sameAs(name: string, args: Record<string, unknown>, path: string, shape: (body: any) => unknown = (body) => body.data) {
  const [result, rest] = await Promise.all([call(name, args), s.v1(path)]);
  if (rest.status === 200) expect(answerOf(result as never), `${name} ${JSON.stringify(args)}`).toEqual(shape(rest.body));
  else {
    expect(errorOf(result as never), `${name} ${JSON.stringify(args)}`).toEqual({
      body: rest.body,
      meta: { 'tickhouse/error': rest.body.detail.error ?? 'not_found', 'tickhouse/status': rest.status },
    });
  }
  return rest.status;
}

it('lists the nine tools, each with a strict input schema, an output schema, a stated bound, and listing counts nothing', async () => {
  const { tools } = await mcp.listTools();
  expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
  for (const tool of tools) {
    expect(tool.inputSchema.type, tool.name).toBe('object');
    expect((tool.inputSchema as { additionalProperties?: boolean }).additionalProperties, tool.name).toBe(false);
    expect(tool.outputSchema?.type, tool.name).toBe('object');
    expect(tool.annotations, tool.name).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    expect(tool.description, tool.name).toMatch(/ Bounded: [^.]+\.$/);
  }
  const limits = Object.fromEntries(tools.map((t) => [t.name, (t.inputSchema.properties as Record<string, { maximum?: number }>).limit?.maximum]));
  expect(limits).toMatchObject({ search_markets: 50, get_candles: 500 });
  expect(mcp.getServerVersion()).toEqual({ name: 'tickhouse', title: 'tickhouse: Polymarket market data at any millisecond', version: '1.0.0' });
  // initialize, notifications/initialized and tools/list are no data requests.
  const before = await requestsToday();
  const other = await s.client();
  expect((await other.listTools()).tools).toEqual(tools);
  await other.close();
  expect(await requestsToday()).toBe(before);
});

describe('books', () => {
  it('get_order_book equals /v1/orderbook at every instant and depth, latest included, and ISO instants name the same ms', async () => {
    const statuses = new Set<number>();
    for (const t of [...instants, undefined]) {
      for (const depth of [1, 20, 100]) {
        const query = `asset_id=${asset}&limit=${depth}${t === undefined ? '' : `&timestamp=${t}`}`;
        statuses.add(await sameAs('get_order_book', { asset_id: asset, depth, ...(t === undefined ? {} : { timestamp: t }) }, `/v1/orderbook?${query}`));
      }
    }
    expect([...statuses].sort()).toEqual([200, 404]);
    const t = instants[5];
    const iso = new Date(t).toISOString();
    expect(answerOf((await call('get_order_book', { asset_id: asset, timestamp: iso })) as never)).toEqual(
      answerOf((await call('get_order_book', { asset_id: asset, timestamp: t })) as never),
    );
    const offset = `${new Date(t + 2 * 3_600_000).toISOString().slice(0, 23)}+02:00`;
    expect(answerOf((await call('get_price', { asset_id: asset, timestamp: offset })) as never).timestamp).toBe(
      (await s.v1(`/v1/price?asset_id=${asset}&timestamp=${t}`)).body.data.timestamp,
    );
  });

  it('get_price equals /v1/price, get_execution_price equals /v1/execution-price', async () => {
    for (const t of [...instants, undefined]) {
      const at = t === undefined ? '' : `&timestamp=${t}`;
      await sameAs('get_price', { asset_id: asset, ...(t === undefined ? {} : { timestamp: t }) }, `/v1/price?asset_id=${asset}${at}`);
      if (t === undefined) continue;
      // The eight walks of an instant at once (each a call and its /v1 twin): the book is read once, into the app's cache.
      await Promise.all(
        ['BUY', 'SELL'].flatMap((side) =>
          [0.000001, 1, 2500.5, 1e9].map((amount) =>
            sameAs(
              'get_execution_price',
              { asset_id: asset, side, amount, timestamp: t },
              `/v1/execution-price?asset_id=${asset}&side=${side}&amount=${amount}${at}`,
            ),
          ),
        ),
      );
    }
  });
});

it('get_candles equals /v1/ohlcv for every resolution and each way of choosing buckets', async () => {
  const { first, last } = s.top;
  const mid = Math.floor((first + last) / 2);
  const shape = (body: any) => ({ candles: body.data, count: body.meta.count, resolution: body.meta.resolution });
  let candles = 0;
  for (const resolution of ['1m', '5m', '15m', '1h', '4h', '1d']) {
    for (const range of [{}, { start: first }, { end: mid }, { start: mid, end: last }, { start: first - 86_400_000, end: first - 1 }]) {
      for (const limit of [3, 500]) {
        const args = { asset_id: asset, resolution, limit, ...range };
        const query = new URLSearchParams(Object.entries(args).map(([k, v]) => [k, String(v)]));
        await sameAs('get_candles', args, `/v1/ohlcv?${query}`, shape);
        candles += answerOf((await call('get_candles', args)) as never).count;
      }
    }
  }
  expect(candles).toBeGreaterThan(1000);
  // The defaults: 1h, the last 100 up to now.
  await sameAs('get_candles', { asset_id: asset }, `/v1/ohlcv?asset_id=${asset}`, shape);
});

it('get_coverage equals /v1/coverage, its interval lists cut to their first 100 with the rest counted', async () => {
  const { first, last } = s.top;
  for (const [start, end] of [
    [first - 10_000, last + 10_000],
    [first + 3_600_000, first + 7_200_000],
  ]) {
    const rest = (await s.v1(`/v1/coverage?asset_id=${asset}&start=${start}&end=${end}`)).body.data;
    const answer = answerOf((await call('get_coverage', { asset_id: asset, start, end })) as never);
    const omitted = { captured: 0, gaps: 0, reconnects: 0 };
    for (const list of ['captured', 'gaps', 'reconnects'] as const) omitted[list] = Math.max(0, rest[list].length - 100);
    expect(answer).toEqual({
      ...rest,
      captured: rest.captured.slice(0, 100),
      gaps: rest.gaps.slice(0, 100),
      reconnects: rest.reconnects.slice(0, 100),
      omitted,
    });
  }
  const whole = answerOf((await call('get_coverage', { asset_id: asset, start: first - 10_000, end: last + 10_000 })) as never);
  // 130 reconnects: 131 captured intervals, 130 disconnected gaps plus 4 around the run (unknown before it, not_subscribed and disconnected
  // before the first open, not_recording after its stop).
  expect(whole.omitted).toEqual({ captured: 31, gaps: 34, reconnects: 30 });
  expect(whole.days.map((d: { condition: string }) => d.condition)).toContain('degraded');
});

describe('markets', () => {
  it('search_markets equals /v1/markets', async () => {
    const shape = (body: any) => ({ markets: body.data, ...body.meta });
    await sameAs('search_markets', {}, '/v1/markets?limit=10', shape);
    await sameAs('search_markets', { limit: 3, offset: 2 }, '/v1/markets?limit=3&offset=2', shape);
    await sameAs('search_markets', { search: 'fed', limit: 50 }, '/v1/markets?search=fed&limit=50', shape);
    await sameAs('search_markets', { search: s.top.market }, `/v1/markets?search=${s.top.market}&limit=10`, shape);
    await sameAs('search_markets', { search: 'no such market', offset: 5 }, '/v1/markets?search=no%20such%20market&offset=5&limit=10', shape);
  });

  it('get_market: tokens as /v1/markets, the instrument as /v1/instruments, the last trade as the CLOB, the quote as /v1/price', async () => {
    const tokens = (await s.v1(`/v1/markets?search=${s.top.market}&limit=100`)).body.data;
    expect(tokens).toHaveLength(2);
    const clob = async (at: number | 'latest', path: string) => (await s.v1(`/v1/clob/${s.d.key}/at/${at}/${path}?token_id=${asset}`)).body;
    const tradeTimes = (await ticksOf(s.top.first, s.top.last)).filter((t) => t.event === 'last_trade_price').map((t) => t.t);
    let trades = 0;
    for (const t of [...instants.filter((t) => t >= s.top.first), undefined]) {
      const query = t === undefined ? '' : `&timestamp=${t}`;
      const [result, price, lastTrade, instrument] = await Promise.all([
        call('get_market', { asset_id: asset, ...(t === undefined ? {} : { timestamp: t }) }),
        s.v1(`/v1/price?asset_id=${asset}${query}`),
        clob(t ?? 'latest', 'last-trade-price'),
        s.v1(`/v1/instruments?asset_id=${asset}${query}`),
      ]);
      const answer = answerOf(result as never);
      expect(answer).toEqual({
        asset_id: asset,
        timestamp: t ?? null,
        market: s.top.market,
        tokens,
        instrument: instrument.body.data,
        quote: price.body.data,
        last_trade:
          lastTrade.side === ''
            ? null
            : { timestamp: tradeTimes.filter((tt: number) => tt <= (t ?? Infinity)).at(-1), price: Number(lastTrade.price), side: lastTrade.side },
      });
      if (answer.last_trade) trades++;
    }
    expect(trades).toBeGreaterThan(3);
    // Before the first book: no quote, no trade; a token without any data: 404.
    const before = answerOf((await call('get_market', { asset_id: asset, timestamp: s.top.first - 1 })) as never);
    expect([before.quote, before.last_trade]).toEqual([null, null]);
    expect(errorOf((await call('get_market', { asset_id: '123' })) as never)).toEqual({
      body: { detail: { message: 'No data for asset 123.' } },
      meta: { 'tickhouse/error': 'not_found', 'tickhouse/status': 404 },
    });
  });

  it('get_market: the instrument follows a tick size change at the instant, as /v1/instruments does', async () => {
    // The demo market whose tick goes 0.01 → 0.001 (a tick_size_change per token): its tick at its first tick differs from now.
    const entries = (await s.v1('/v1/markets?limit=100')).body.data;
    const instrumentAt = async (id: string, t?: number) => (await s.v1(`/v1/instruments?asset_id=${id}${t === undefined ? '' : `&timestamp=${t}`}`)).body.data;
    const atFirst = await Promise.all(entries.map((e: any) => instrumentAt(e.asset_id, Date.parse(`${e.first_seen.replace(' ', 'T')}Z`))));
    const changing = entries.filter((e: any, i: number) => atFirst[i].tick_size !== e.tick_size);
    expect(changing.length).toBeGreaterThan(0);
    const e = changing[0];
    const [first, last] = [e.first_seen, e.last_seen].map((x: string) => Date.parse(`${x.replace(' ', 'T')}Z`));
    const seen = new Set<number>();
    // 13 instants over its history, one a day ahead (answered as of now + 1 minute) and the latest.
    for (const t of [...Array.from({ length: 13 }, (_, i) => first + Math.floor(((last - first) * i) / 12)), NOW + 86_400_000, undefined]) {
      const [result, rest] = await Promise.all([
        call('get_market', { asset_id: e.asset_id, ...(t === undefined ? {} : { timestamp: t }) }),
        instrumentAt(e.asset_id, t),
      ]);
      const answer = answerOf(result as never);
      expect(answer.instrument, `${t}`).toEqual(rest);
      seen.add(answer.instrument.tick_size);
      if (t === NOW + 86_400_000) expect(answer.instrument.as_of).toBe(NOW + 60_000);
    }
    expect([...seen].sort()).toEqual([0.001, 0.01]);
  });
});

/** Every tick of [start, end] through /v1/ticks pages (the cursor walk of docs/API.md §4). */
async function ticksOf(start: number, end: number, of = asset) {
  const out: any[] = [];
  let cursor = '';
  do {
    const page = (await s.v1(`/v1/ticks?asset_id=${of}&start=${start}&end=${end}&limit=5000${cursor && `&cursor=${cursor}`}`)).body;
    out.push(...page.data);
    cursor = page.meta.next_cursor ?? '';
  } while (cursor);
  return out;
}

/** The summary as docs/MCP.md §3 defines it, computed from the ticks: sums in exact micro-units, rounded half up to 6 decimals. */
function summaryModel(ticks: any[], start: number, end: number, of = asset) {
  const micro = (x: number) => BigInt(Math.round(x * 1e6));
  const trades = ticks.filter((t) => t.event === 'last_trade_price');
  const volume = trades.reduce((sum, t) => sum + micro(t.size), 0n);
  const notional = trades.reduce((sum, t) => sum + micro(t.price) * micro(t.size), 0n);
  const rounded = (a: bigint, b: bigint) => Number((2n * a + b) / (2n * b)) / 1e6;
  const count = (event: string) => ticks.filter((t) => t.event === event).length;
  return {
    asset_id: of,
    start,
    end,
    ticks: ticks.length,
    events: { price_change: count('price_change'), book: count('book'), last_trade_price: trades.length },
    first: ticks[0] ?? null,
    last: ticks.at(-1) ?? null,
    trades: {
      count: trades.length,
      volume: Number(volume) / 1e6,
      notional: rounded(notional, 1_000_000n),
      vwap: trades.length ? rounded(notional, volume) : null,
      low: trades.length ? Math.min(...trades.map((t) => t.price)) : null,
      high: trades.length ? Math.max(...trades.map((t) => t.price)) : null,
    },
  };
}

it('get_tick_summary equals the summary of /v1/ticks over the same range', async () => {
  const { first, last } = s.top;
  const mid = instants[6];
  for (const [start, end] of [
    [first, last],
    [first - 1000, mid],
    [mid, mid],
    [mid + 1, NOW + 86_400_000],
    [first - 86_400_000, first - 1],
  ]) {
    const model = summaryModel(await ticksOf(start, end), start, end);
    expect(answerOf((await call('get_tick_summary', { asset_id: asset, start, end })) as never), `[${start}, ${end}]`).toEqual(model);
  }
  // A notional exactly on a half micro-unit, which a Float64 sum puts 1 pico-unit below (0.500625 × 999,000,000.0008 = 500,124,375.0004005).
  const big = '888';
  const trade = (t: number, price: string, size: string) =>
    JSON.stringify({ event_type: 'last_trade_price', market: '0xbig', asset_id: big, price, size, side: 'SELL', timestamp: String(t) });
  await replayLines(s.d.te.engine, [trade(first, '0.500625', '999000000.0008')], { sourceId: 'big-trade' });
  const exact = answerOf((await call('get_tick_summary', { asset_id: big, start: first, end: last })) as never);
  expect(exact).toEqual(summaryModel(await ticksOf(first, last, big), first, last, big));
  expect(exact.trades).toMatchObject({ notional: 500124375.000401, volume: 999000000.0008, vwap: 0.500625 });
  const whole = answerOf((await call('get_tick_summary', { asset_id: asset, start: first, end: last })) as never);
  expect(whole.trades.count).toBeGreaterThan(10);
  expect(whole.first.t).toBe(first);
  expect(whole.last.t).toBe(last);
});

it('get_export_link names the export endpoint, whose download is the same file as asking it directly', async () => {
  const { first, last } = s.top;
  const answer = answerOf((await call('get_export_link', { dataset: 'ticks', asset_id: asset, start: first, end: last, format: 'jsonl' })) as never);
  const query = `asset_id=${asset}&start=${first}&end=${last}&format=jsonl`;
  expect(answer).toEqual({
    dataset: 'ticks',
    format: 'jsonl',
    url: `http://localhost:8080/v1/ticks/export?${query}`,
    curl: `curl -H "Authorization: Bearer $TICKHOUSE_API_KEY" -o ticks_${asset}_${first}_${last}.jsonl 'http://localhost:8080/v1/ticks/export?${query}'`,
  });
  const viaLink = await fetch(answer.url.replace('http://localhost:8080', s.origin), { headers: { authorization: `Bearer ${s.d.key}` } });
  expect(viaLink.status).toBe(200);
  const lines = (await viaLink.text()).trim().split('\n');
  expect(lines.map((l) => JSON.parse(l))).toEqual(await ticksOf(first, last));

  const book = answerOf(
    (await call('get_export_link', { dataset: 'book_snapshots', asset_id: asset, start: first, end: last, depth: 5, interval: 60_000 })) as never,
  );
  expect(book.url).toBe(`http://localhost:8080/v1/orderbook/export?asset_id=${asset}&start=${first}&end=${last}&format=csv&depth=5&interval=60000`);
  expect(errorOf((await call('get_export_link', { dataset: 'ticks', asset_id: asset, start: first, end: last, depth: 5 })) as never).body).toEqual({
    detail: { error: 'invalid_parameter', message: 'depth does not apply to dataset ticks', param: 'depth' },
  });
});

describe('errors are tool errors with the REST API’s body', () => {
  it('a bad or missing parameter: invalid_parameter naming it, in the REST API’s words', async () => {
    await sameAs('get_order_book', { asset_id: 'abc' }, '/v1/orderbook?asset_id=abc');
    await sameAs('get_price', {}, '/v1/price');
    await sameAs('get_candles', { asset_id: asset, start: 2000, end: 1000 }, `/v1/ohlcv?asset_id=${asset}&start=2000&end=1000`);
    await sameAs(
      'get_execution_price',
      { asset_id: asset, side: 'HOLD', amount: 1, timestamp: 1 },
      `/v1/execution-price?asset_id=${asset}&side=HOLD&amount=1&timestamp=1`,
    );
    const bad = async (name: string, args: Record<string, unknown>) => errorOf((await call(name, args)) as never).body.detail;
    expect(await bad('get_order_book', { asset_id: asset, depth: 0 })).toEqual({
      error: 'invalid_parameter',
      message: 'depth must be an integer between 1 and 100',
      param: 'depth',
    });
    expect(await bad('get_candles', { asset_id: asset, limit: 501 })).toEqual({
      error: 'invalid_parameter',
      message: 'limit must be an integer between 1 and 500',
      param: 'limit',
    });
    expect(await bad('get_price', { asset_id: asset, timestamp: '2026-02-30T00:00:00Z' })).toEqual({
      error: 'invalid_parameter',
      message: 'timestamp must be Unix milliseconds (an integer, 0 or more) or ISO 8601 text such as 2026-06-01T12:00:00Z',
      param: 'timestamp',
    });
    expect(await bad('get_price', { asset_id: asset, timestamp: '2026-06-01T12:00:00' })).toMatchObject({ param: 'timestamp' });
    expect(await bad('get_price', { asset_id: asset, at: 5 })).toEqual({
      error: 'invalid_parameter',
      message: 'Unknown argument at; this tool takes asset_id, timestamp',
      param: 'at',
    });
    expect(await bad('get_coverage', { asset_id: asset, start: NOW - 93 * 86_400_000, end: NOW })).toEqual({
      error: 'invalid_parameter',
      message: 'end must be at most 92 days after start here; GET /v1/coverage answers longer ranges',
      param: 'end',
    });
    expect(await bad('search_markets', { limit: 51 })).toEqual({
      error: 'invalid_parameter',
      message: 'limit must be an integer between 1 and 50',
      param: 'limit',
    });
  });

  it('an unknown tool is a protocol error and counts nothing; a refused parameter counts, as a 400 does', async () => {
    const before = await requestsToday();
    const unknown = await call('get_everything', {}).catch((err) => err);
    expect(unknown).toBeInstanceOf(McpError);
    expect([unknown.code, unknown.message]).toEqual([-32602, 'MCP error -32602: Tool get_everything not found']);
    expect(await requestsToday()).toBe(before);
    await call('get_price', { asset_id: 'x' });
    expect(await requestsToday()).toBe(before + 1);
  });
});
