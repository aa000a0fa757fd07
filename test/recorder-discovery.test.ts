import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../src/clickhouse/engine.js';
import { type Recorder, startRecorder } from '../src/ingest/recorder/recorder.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { type GammaServer, startGammaServer } from './support/gamma-server.js';
import { type PolymarketWsServer, startPolymarketWsServer } from './support/polymarket-ws-server.js';
import { recorderOptions, truncateIngestTables, waitFor } from './support/recorder-harness.js';

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
