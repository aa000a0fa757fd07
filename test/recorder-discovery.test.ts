import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../src/clickhouse/engine.js';
import { timeline } from '../src/coverage/timeline.js';
import { type Recorder, startRecorder } from '../src/ingest/recorder/recorder.js';
import { formatStatusLine } from '../src/ingest/recorder/status.js';
import { metrics } from '../src/metrics.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { type GammaServer, startGammaServer } from './support/gamma-server.js';
import { type PolymarketWsServer, startPolymarketWsServer } from './support/polymarket-ws-server.js';
import { captureLog, recorderOptions, truncateIngestTables, waitFor } from './support/recorder-harness.js';

let te: TestEngine;
let engine: Engine;
let gamma: GammaServer;
let ws: PolymarketWsServer;
let recorder: Recorder | null;

beforeAll(async () => {
  te = await createTestEngine();
  engine = te.engine;
  gamma = await startGammaServer();
});

afterAll(async () => {
  await gamma?.close();
  await te?.close();
});

beforeEach(async () => {
  await truncateIngestTables(engine);
  ws = await startPolymarketWsServer();
  gamma.requests.length = 0;
  recorder = null;
});

afterEach(async () => {
  await recorder?.stop();
  await ws.close();
});

/** A Gamma market object as served: outcomes and token ids are JSON-encoded strings. */
function market(i: number, over: Record<string, unknown> = {}) {
  return {
    id: String(i),
    conditionId: `0xc${i}`,
    question: `Question ${i}?`,
    slug: `question-${i}`,
    outcomes: '["Up", "Down"]',
    clobTokenIds: JSON.stringify([`${i}01`, `${i}02`]),
    active: true,
    closed: false,
    enableOrderBook: true,
    updatedAt: '2026-01-02T03:04:05.678Z',
    ...over,
  };
}

const tokens = (i: number) => [`${i}01`, `${i}02`];
const subscribedAssets = () => ws.open().flatMap((c) => [...c.assets]);
const priceChange = (asset: string, t: number) => ({
  market: '0xm',
  timestamp: String(t),
  event_type: 'price_change',
  price_changes: [{ asset_id: asset, price: '0.5', size: '10', side: 'BUY' }],
});

describe('--all discovery', () => {
  it("walks Gamma's keyset pages and subscribes every token of the live markets with an order book, 500 per socket, 100 per frame", async () => {
    const open = Array.from({ length: 1030 }, (_, i) => market(1000 + i));
    gamma.setMarkets([
      ...open,
      ...Array.from({ length: 20 }, (_, i) => market(5000 + i, { closed: true })),
      ...Array.from({ length: 20 }, (_, i) => market(6000 + i, { active: false })),
      ...Array.from({ length: 20 }, (_, i) => market(7000 + i, { enableOrderBook: false })),
    ]);
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: null }));
    const expected = open.flatMap((_, i) => tokens(1000 + i));
    await waitFor(() => subscribedAssets().length === expected.length, 'every subscription');

    // 1070 markets with closed=false: 11 pages of 100, each after the cursor the page before gave.
    const cursor = (n: number) => Buffer.from(`after:${n}`).toString('base64url');
    expect(gamma.requests).toEqual([
      '/markets/keyset?closed=false&limit=100',
      ...Array.from({ length: 10 }, (_, i) => `/markets/keyset?closed=false&limit=100&after_cursor=${cursor(100 * (i + 1))}`),
    ]);
    expect(subscribedAssets().sort()).toEqual([...expected].sort());
    expect(ws.open().map((c) => c.assets.size)).toEqual([500, 500, 500, 500, 60]);
    expect(ws.open().every((c) => c.ignored.size === 0 && c.closedBy === null)).toBe(true);
    // A full socket subscribes in five frames of 100 ids: the first opens the subscription.
    const frames = ws.connections[0].received.filter((m) => m !== 'PING').map((m) => JSON.parse(m));
    expect(frames.map((f) => [f.type ?? f.operation, f.assets_ids.length])).toEqual([
      ['market', 100],
      ['subscribe', 100],
      ['subscribe', 100],
      ['subscribe', 100],
      ['subscribe', 100],
    ]);
    expect(recorder.status()).toMatchObject({ assets: 2060, live: 2060, silent: 0, sockets: 5 });

    await recorder.stop();
    const rows = (
      await engine.rows<{ updated_at: string | number }>(
        'SELECT asset_id, market, outcome, question, slug, toUnixTimestamp64Milli(updated_at) AS updated_at FROM markets FINAL WHERE asset_id IN ' +
          '{a:Array(String)} ORDER BY asset_id',
        { params: { a: tokens(1000) } },
      )
    ).map((r) => ({ ...r, updated_at: Number(r.updated_at) }));
    expect(rows).toEqual([
      {
        asset_id: '100001',
        market: '0xc1000',
        outcome: 'Up',
        question: 'Question 1000?',
        slug: 'question-1000',
        updated_at: Date.parse('2026-01-02T03:04:05.678Z'),
      },
      {
        asset_id: '100002',
        market: '0xc1000',
        outcome: 'Down',
        question: 'Question 1000?',
        slug: 'question-1000',
        updated_at: Date.parse('2026-01-02T03:04:05.678Z'),
      },
    ]);
    const [{ n }] = await engine.rows<{ n: string | number }>('SELECT count() AS n FROM markets FINAL');
    expect(Number(n)).toBe(2060);
    const protocols = await engine.rows<{ v: string; n: number }>(
      'SELECT protocol_version AS v, toUInt32(count()) AS n FROM market_protocols FINAL GROUP BY v',
    );
    expect(protocols).toEqual([{ v: 'v1', n: 2060 }]);
  });

  it('starts without Gamma and subscribes once Gamma answers', async () => {
    gamma.setMarkets([market(1)]);
    gamma.failWith(502);
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: null }));
    expect(recorder.status()).toMatchObject({ assets: 0, sockets: 0 });
    gamma.failWith(null);
    await waitFor(() => subscribedAssets().length === 2, 'the subscription after Gamma recovered');
    expect(gamma.requests.length).toBeGreaterThanOrEqual(2);
  });

  it('stops at --max-assets', async () => {
    gamma.setMarkets(Array.from({ length: 600 }, (_, i) => market(1000 + i)));
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: null, maxAssets: 3 }));
    await waitFor(() => subscribedAssets().length === 3, 'the subscription');
    expect(gamma.requests).toHaveLength(1);
    expect(subscribedAssets()).toEqual([...tokens(1000), tokens(1001)[0]]);
    expect(recorder.status()).toMatchObject({ assets: 3, live: 3 });
    // A new market announced on the feed does not go past the bound either.
    ws.publish({ event_type: 'new_market', market: '0xnew', assets_ids: ['777'], outcomes: ['Yes'], timestamp: '1766000000000' });
    await waitFor(() => recorder!.status().frames === 1, 'the new_market frame');
    expect(recorder.status().assets).toBe(3);
  });

  it('follows new markets while running: from a Gamma refresh and from new_market events, without a new socket', async () => {
    gamma.setMarkets([market(1)]);
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: null, discoveryIntervalMs: 100 }));
    await waitFor(() => subscribedAssets().length === 2, 'the first subscription');

    gamma.setMarkets([market(1), market(2)]);
    await waitFor(() => subscribedAssets().length === 4, 'the refreshed subscription');
    ws.publish({
      event_type: 'new_market',
      market: '0xc3',
      question: 'Third?',
      slug: 'third',
      assets_ids: ['301', '302'],
      outcomes: ['Yes', 'No'],
      timestamp: '1766000000000',
    });
    await waitFor(() => subscribedAssets().length === 6, 'the new_market subscription');

    expect(ws.connections).toHaveLength(1);
    const messages = ws.connections[0].received.filter((m) => m !== 'PING').map((m) => JSON.parse(m));
    expect(messages).toEqual([
      { assets_ids: tokens(1), type: 'market', custom_feature_enabled: true, initial_dump: true },
      { assets_ids: tokens(2), operation: 'subscribe' },
      { assets_ids: ['301', '302'], operation: 'subscribe' },
    ]);
    // Unchanged markets are not written again on every refresh: let three more refreshes ask.
    const asked = gamma.requests.length;
    await waitFor(() => gamma.requests.length >= asked + 3, 'three more refreshes');
    ws.publish(priceChange('201', 1_766_000_000_001));
    ws.publish(priceChange('301', 1_766_000_000_002));
    await waitFor(() => recorder!.status().frames === 3, 'the ticks');
    await recorder.stop();
    expect(recorder.status().sink.stored.markets).toBe(6);
    // The writer skips a market row identical to the stored one; the recorder does not even produce
    // it again: 6 market rows, the new_market event kept once per token it names (market_events,
    // docs/INGEST.md §5) and the 2 ticks.
    expect(recorder.status().rows).toBe(10);
    const events = await engine.rows<{ asset_id: string; event: string }>('SELECT asset_id, toString(event) AS event FROM market_events ORDER BY asset_id');
    expect(events).toEqual([
      { asset_id: '301', event: 'new_market' },
      { asset_id: '302', event: 'new_market' },
    ]);
    const ticks = await engine.rows<{ asset_id: string; side: string }>('SELECT asset_id, side FROM ticks ORDER BY asset_id');
    expect(ticks).toEqual([
      { asset_id: '201', side: 'UP' },
      { asset_id: '301', side: 'YES' },
    ]);
  });
});

describe('--assets', () => {
  it('subscribes exactly the given tokens, labels them from Gamma, and does not follow new markets', async () => {
    gamma.setMarkets([market(1), market(2)]);
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: ['102'] }));
    await waitFor(() => subscribedAssets().length === 1, 'the subscription');
    expect(gamma.requests).toEqual(['/markets/keyset?limit=100&clob_token_ids=102']);
    ws.publish({ event_type: 'new_market', market: '0xc3', assets_ids: ['301', '302'], outcomes: ['Yes', 'No'], timestamp: '1766000000000' });
    ws.publish(priceChange('102', 1_766_000_000_001));
    await waitFor(() => recorder!.status().frames === 2, 'the frames');
    await recorder.stop();
    expect(ws.connections[0].received.filter((m) => m !== 'PING')).toEqual([
      JSON.stringify({ assets_ids: ['102'], type: 'market', custom_feature_enabled: true, initial_dump: true }),
    ]);
    expect(recorder.status().assets).toBe(1);
    const ticks = await engine.rows('SELECT asset_id, side FROM ticks');
    expect(ticks).toEqual([{ asset_id: '102', side: 'DOWN' }]);
  });

  it('looks a v2 token up by position_ids once clob_token_ids does not know it, and labels it', async () => {
    const [, v2] = fixture('gamma-v2-markets.json');
    const position = (v2.positionIds as string[])[1];
    gamma.setMarkets([market(1), v2]);
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: ['102', position] }));
    await waitFor(() => subscribedAssets().length === 2, 'the subscription');
    expect(gamma.requests).toEqual([
      `/markets/keyset?limit=100&clob_token_ids=102&clob_token_ids=${position}`,
      `/markets/keyset?limit=100&position_ids=${position}`,
    ]);
    ws.publish(priceChange(position, 1_766_000_000_001));
    await waitFor(() => recorder!.status().frames === 1, 'the frame');
    await recorder.stop();
    expect(await engine.rows('SELECT asset_id, side FROM ticks')).toEqual([{ asset_id: position, side: 'NO' }]);
    expect(await engine.rows('SELECT asset_id, protocol_version FROM market_protocols FINAL ORDER BY asset_id')).toEqual(
      [
        { asset_id: '102', protocol_version: 'v1' },
        { asset_id: position, protocol_version: 'v2' },
      ].sort((a, b) => (a.asset_id < b.asset_id ? -1 : 1)),
    );
  });

  it('records with UNKNOWN labels when Gamma is down', async () => {
    gamma.failWith(503);
    try {
      recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: ['102'] }));
      await waitFor(() => subscribedAssets().length === 1, 'the subscription');
      ws.publish(priceChange('102', 1_766_000_000_001));
      await waitFor(() => recorder!.status().frames === 1, 'the frame');
      await recorder.stop();
      expect(await engine.rows('SELECT asset_id, side FROM ticks')).toEqual([{ asset_id: '102', side: 'UNKNOWN' }]);
    } finally {
      gamma.failWith(null);
    }
  });
});

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/polymarket/${name}`, import.meta.url), 'utf8')) as Record<string, unknown>[];
const book = (asset: string) => ({ event_type: 'book', asset_id: asset, market: '0xm', timestamp: '1766000000000', hash: '', bids: [], asks: [] });
/** The messages a connection received, PINGs left out, parsed. */
const received = (i: number) => ws.connections[i].received.filter((m) => m !== 'PING').map((m) => JSON.parse(m));

describe('the whole venue', () => {
  it('subscribes v2 markets by their positionIds, labels a moneyline market by its sides and logs the markets it cannot take', async () => {
    const [v1, v2, moneyline, v3] = fixture('gamma-v2-markets.json');
    const [legacy] = fixture('gamma-markets.json');
    gamma.setMarkets([v1, v2, moneyline, v3, legacy]);
    const ids = (m: Record<string, unknown>) => (Array.isArray(m.positionIds) ? m.positionIds : JSON.parse(m.clobTokenIds as string)) as string[];
    const logs = captureLog();
    try {
      recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: null }));
      const expected = [...ids(v1), ...ids(v2), ...ids(moneyline), ...JSON.parse(legacy.clobTokenIds as string)];
      await waitFor(() => subscribedAssets().length === 8, 'the subscriptions');
      expect(subscribedAssets().sort()).toEqual(expected.sort());
      ws.publish(priceChange(ids(v2)[1], 1_766_000_000_001));
      ws.publish(priceChange(ids(moneyline)[0], 1_766_000_000_002));
      await waitFor(() => recorder!.status().frames === 2, 'the ticks');
      await recorder.stop();
    } finally {
      logs.stop();
    }
    const ticks = await engine.rows('SELECT asset_id, side FROM ticks ORDER BY t');
    expect(ticks).toEqual([
      { asset_id: ids(v2)[1], side: 'NO' },
      { asset_id: ids(moneyline)[0], side: 'ARGENTINA' },
    ]);
    const protocols = await engine.rows<{ asset_id: string; protocol_version: string }>(
      'SELECT asset_id, protocol_version FROM market_protocols FINAL ORDER BY asset_id',
    );
    expect(protocols).toEqual(
      [
        ...ids(v1).map((a) => [a, 'v1']),
        ...ids(v2).map((a) => [a, 'v2']),
        ...ids(moneyline).map((a) => [a, 'v2']),
        ...JSON.parse(legacy.clobTokenIds as string).map((a: string) => [a, 'v1']),
      ]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([asset_id, protocol_version]) => ({ asset_id, protocol_version })),
    );
    const warnings = logs.lines.filter((l) => l.level === 'warn' && String(l.msg).startsWith('Gamma market'));
    expect(warnings).toMatchObject([
      { msg: 'Gamma market skipped: its version is neither "v1" nor "v2"', source: 'recorder discovery', slug: v3.slug, version: 'v3' },
      { msg: 'Gamma market without a version: read as a v1 (CTF) market, its outcome ids from clobTokenIds', slug: legacy.slug },
    ]);
  });

  it('leaves a market when it resolves or when Gamma stops listing it, and gives its room to a new one', async () => {
    gamma.setMarkets([market(1), market(2), market(3)]);
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: null, discoveryIntervalMs: 100, assetsPerSocket: 6 }));
    await waitFor(() => subscribedAssets().length === 6, 'the subscriptions');

    ws.publish({
      event_type: 'market_resolved',
      id: '1',
      market: '0xc1',
      assets_ids: tokens(1),
      winning_asset_id: '101',
      winning_outcome: 'Up',
      timestamp: '1766000000100',
    });
    await waitFor(() => subscribedAssets().length === 4, 'the resolved market left');
    // Gamma still lists market 1 as live, its metadata updated since: a resolved market does not come back.
    gamma.setMarkets([{ ...market(1), updatedAt: '2026-01-03T00:00:00.000Z' }, { ...market(2), closed: true }, market(3), market(4)]);
    await waitFor(() => subscribedAssets().length === 4 && subscribedAssets().includes('401'), 'market 2 left, market 4 joined');
    const asked = gamma.requests.length;
    await waitFor(() => gamma.requests.length >= asked + 3, 'three more refreshes');
    expect(subscribedAssets().sort()).toEqual([...tokens(3), ...tokens(4)]);
    expect(recorder.status()).toMatchObject({ assets: 4, live: 4, sockets: 1 });
    await recorder.stop();

    expect(ws.connections).toHaveLength(1);
    expect(received(0).filter((m) => m.operation)).toEqual([
      { assets_ids: tokens(1), operation: 'unsubscribe' },
      { assets_ids: tokens(2), operation: 'unsubscribe' },
      { assets_ids: tokens(4), operation: 'subscribe' },
    ]);
    const records = await engine.rows<{ asset_id: string; kind: string; run: string; socket: number; t: number; seq: number }>(
      `SELECT asset_id, toString(kind) AS kind, run, socket, toUnixTimestamp64Milli(t) AS t, seq FROM capture_events
       WHERE asset_id IN ('', '101', '401') ORDER BY t, seq`,
    );
    expect(records.map((r) => [r.asset_id, r.kind])).toEqual([
      ['', 'start'],
      ['101', 'subscribe'],
      ['101', 'open'],
      ['101', 'unsubscribe'],
      ['401', 'subscribe'],
      ['401', 'open'],
      ['', 'stop'],
    ]);
    // Coverage: captured from open to unsubscribe, not subscribed after it while the run went on.
    const num = (r: (typeof records)[number]) => ({ ...r, t: Number(r.t), seq: Number(r.seq), socket: Number(r.socket) });
    const runs = records.filter((r) => r.asset_id === '').map((r) => ({ ...num(r), kind: r.kind as 'start' | 'stop' }));
    const mine = records.filter((r) => r.asset_id === '101').map((r) => ({ ...num(r), kind: r.kind as 'open' }));
    const [open, left, stop] = [mine[1].t, mine[2].t, runs[1].t];
    expect(timeline(runs, mine, true, open, stop + 1).segments).toEqual([
      { from: open, to: left, state: 'captured' },
      ...(stop > left ? [{ from: left, to: stop, state: 'not_subscribed' }] : []),
      { from: stop, to: stop + 1, state: 'not_recording' },
    ]);
  });
});

describe('silent tokens', () => {
  it('counts the subscribed tokens the server does not serve, on the status line and at /metrics', async () => {
    await ws.close();
    ws = await startPolymarketWsServer({ maxAssetsPerConnection: 3 });
    gamma.setMarkets([market(1), market(2), market(3)]);
    for (const i of [1, 2, 3]) for (const a of tokens(i)) ws.setBook(book(a));
    recorder = await startRecorder(engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: null, assetsPerSocket: 5 }));
    await waitFor(() => recorder!.status().silent === 2, 'two silent tokens');
    // Socket 1 holds five tokens; the server serves the first three and ignores two.
    expect(ws.connections.map((c) => [c.assets.size, [...c.ignored]])).toEqual([
      [3, [tokens(2)[1], tokens(3)[0]]],
      [1, []],
    ]);
    expect(recorder.status()).toMatchObject({ live: 6, assets: 6, silent: 2, sockets: 2 });
    const line = formatStatusLine({ ...recorder.status(), framesPerSec: 0, rowsPerSec: 0 });
    expect(line).toContain('sockets 2/2, tokens 6 live, 6 subscribed, 2 silent,');
    const text = metrics.render();
    expect(text).toMatch(/^tickhouse_recorder_live_tokens 6$/m);
    expect(text).toMatch(/^tickhouse_recorder_subscribed_assets 6$/m);
    expect(text).toMatch(/^tickhouse_recorder_silent_tokens 2$/m);
  });
});
