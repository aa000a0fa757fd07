import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { replayLines } from '../src/ingest/frame-files.js';
import { MarketFeed } from '../src/ingest/recorder/market-feed.js';
import { type FrameStream, generateFrames } from './support/book-frames.js';
import { fixturePath } from './support/fixtures.js';
import { waitFor } from './support/recorder-harness.js';
import { type ComparedMarketEvent, ReplayRecorder, storedMarketEvents, storedMarkets, storedTicks } from './support/replay-recorder.js';
import { type ReplayService, startReplayService } from './support/replay-service.js';

/**
 * docs/TIME-MACHINE.md §1 exactness: the recorder's own pieces (MarketFeed, Normalizer) pointed at the
 * replay record exactly the stored ticks of the subscribed assets in (from, to], in order — on the
 * real sample frames and on a generated stream (equal-ms bursts, several assets and markets, books
 * re-sent mid-stream, all three price_change generations), with subscriptions changed mid-replay.
 */
const SAMPLE_LINES = readFileSync(fixturePath('polymarket/ws-frames.jsonl'), 'utf8').split('\n').filter(Boolean);
/** A new_market with its fee schedule, and a trade with a fee rate and transaction hash. */
const EXTRA_LINES = readFileSync(fixturePath('polymarket/market-events.jsonl'), 'utf8').split('\n').filter(Boolean);
const GAMMA = JSON.parse(readFileSync(fixturePath('polymarket/gamma-markets.json'), 'utf8'));

const CUSTOM_EVENTS = ['tick_size_change', 'best_bid_ask', 'market_resolved', 'new_market'];
/** The markets of the generated segments (test/support/book-frames.ts). */
const GENERATED = "('0xaaa1', '0xbbb2', '0xccc3')";

/** Each asset's market events in arrival order: what the exactness rule compares (rows of one event differ only in their asset). */
function byAsset(events: ComparedMarketEvent[]): Record<string, ComparedMarketEvent[]> {
  const out: Record<string, ComparedMarketEvent[]> = {};
  for (const e of events) (out[e.asset_id] ??= []).push(e);
  return out;
}

/** Quiet stretch between the generated segments: 1.5 s of wall time at SPEED, for subscription changes. */
const GAP = 1_500_000;
const SPEED = 1000;

let svc: ReplayService;
let segments: FrameStream[];

beforeAll(async () => {
  svc = await startReplayService(Date.UTC(2030, 0, 1));
  await replayLines(svc.te.engine, SAMPLE_LINES, { sourceId: 'replay-roundtrip-sample', markets: GAMMA });
  await replayLines(svc.te.engine, EXTRA_LINES, { sourceId: 'replay-roundtrip-extra' });
  // Three segments of the same assets, one source (so seq keeps arrival order); each opens with a
  // re-sent array of books.
  const a = generateFrames(1501, 300, 1_770_000_000_000);
  const b = generateFrames(1502, 300, a.end + GAP);
  const c = generateFrames(1503, 300, b.end + GAP);
  segments = [a, b, c];
  const summary = await replayLines(svc.te.engine, [...a.lines, ...b.lines, ...c.lines], { sourceId: 'replay-roundtrip-generated' });
  expect(summary.normalizer.malformed).toBe(0);
}, 120_000);

afterAll(() => svc?.close());

/** MarketFeed (the recorder's socket) on the replay; resolves once the replay closed the socket. */
async function recordWithFeed(query: Record<string, string | number>, assets: string[], during?: (feed: MarketFeed, rec: ReplayRecorder) => void) {
  const rec = new ReplayRecorder(await storedMarkets(svc.te.engine));
  const feed = new MarketFeed({
    url: svc.replayUrl({ ...query, key: svc.key }),
    assetsPerSocket: 500,
    pingIntervalMs: 200,
    staleAfterMs: 60_000,
    // The replay closes at `to`; a reconnect would start it over.
    reconnectMinMs: 600_000,
    reconnectMaxMs: 600_000,
    onMessage: (text) => {
      rec.push(text);
      during?.(feed, rec);
    },
  });
  feed.subscribe(assets);
  await waitFor(() => rec.frames.length > 0 && feed.stats().connected === 0, 'the replay to complete', 60_000);
  await feed.close();
  return rec;
}

describe('round trip through the recorder', () => {
  it('the real sample frames: every stored tick of the subscribed assets in (from, to], in order', async () => {
    const assets = (
      await svc.te.engine.rows<{ a: string }>(
        `SELECT DISTINCT asset_id AS a FROM ticks WHERE market NOT IN ('0xaaa1', '0xbbb2', '0xccc3') AND startsWith(market, '0x9a5e') = 0 ORDER BY a`,
      )
    ).map((r) => r.a);
    expect(assets.length).toBe(6);
    const all = await storedTicks(svc.te.engine, Object.fromEntries(assets.map((a) => [a, [[0, Number.MAX_SAFE_INTEGER]]])));
    expect(all.length).toBe(10);
    for (const from of [all[0].t - 1, 1766481546487]) {
      const to = all.at(-1)!.t;
      const rec = await recordWithFeed({ from, to, speed: 'max' }, assets);
      const expected = await storedTicks(svc.te.engine, Object.fromEntries(assets.map((a) => [a, [[from, to]]])));
      expect(rec.malformed).toBe(0);
      expect(rec.ticks).toEqual(expected);
      const opening = JSON.parse(rec.frames.find((f) => f.startsWith('['))!);
      // Before the first tick nothing has a book; at the sample's opening books, those two and the
      // two books an earlier price_change started (an asset of another market) are in the array.
      const times = opening.map((b: { timestamp: string }) => b.timestamp).sort();
      expect(times).toEqual(from === 1766481546487 ? ['1757908892351', '1757908892351', '1766481546487', '1766481546487'] : []);
    }
  }, 60_000);

  it('a generated stream, with assets subscribed mid-replay (their book first, then their events)', async () => {
    const [a, , c] = segments;
    const first = ['1001', '2001', '9009'];
    const later = ['1002', '3001'];
    const from = a.start - 1;
    const to = c.end;
    // Once every tick of the first assets up to the first gap is in, the gap has begun: subscribe
    // inside it (GAP of wall time for the subscription to reach the server).
    const beforeGap = (await storedTicks(svc.te.engine, Object.fromEntries(first.map((x) => [x, [[from, a.end]]])))).length;
    let subscribed = false;
    const rec = await recordWithFeed({ from, to, speed: SPEED }, first, (feed, r) => {
      if (subscribed || r.ticks.length !== beforeGap) return;
      subscribed = true;
      feed.subscribe(later);
    });
    expect(subscribed).toBe(true);
    const expected = await storedTicks(svc.te.engine, {
      ...Object.fromEntries(first.map((x) => [x, [[from, to]]])),
      ...Object.fromEntries(later.map((x) => [x, [[a.end, to]]])),
    });
    expect(rec.malformed).toBe(0);
    expect(rec.ticks.length).toBe(expected.length);
    expect(rec.ticks).toEqual(expected);
    // The generated stream's best_bid_ask and tick_size_change events too (MarketFeed asks for custom features).
    const events = await storedMarketEvents(
      svc.te.engine,
      { ...Object.fromEntries(first.map((x) => [x, [[from, to]]])), ...Object.fromEntries(later.map((x) => [x, [[a.end, to]]])) },
      CUSTOM_EVENTS,
    );
    expect(events.length).toBeGreaterThan(10);
    expect(byAsset(rec.marketEvents)).toEqual(byAsset(events));
    // Equal-ms bursts and items of both assets of a market in one message were exercised.
    expect(rec.frames.some((f) => f.includes('"price_changes"') && f.includes('"1001"') && f.includes('"1002"'))).toBe(true);
    const arrays = rec.frames.filter((f) => f.startsWith('['));
    expect(arrays.length).toBe(2);
    expect(arrays[0]).toBe('[]');
    expect(JSON.parse(arrays[1]).map((b: { asset_id: string }) => b.asset_id)).toEqual(later);
  }, 60_000);

  it('an unsubscribe stops an asset at once; subscribing it again sends its book at the clock, then its events', async () => {
    const [a, b, c] = segments;
    const assets = ['1001', '1002', '2001', '3001', '9009'];
    // From inside the first segment: the opening array holds reconstructed books.
    const times = (await storedTicks(svc.te.engine, { '1001': [[a.start, a.end]] })).map((t) => t.t);
    const from = times[Math.floor(times.length / 2)];
    const to = c.end;
    // The ticks received when each gap begins: all of them up to the first gap, then those of the
    // assets still subscribed up to the second.
    const ticksOf = async (of: string[], after: number, until: number) =>
      (await storedTicks(svc.te.engine, Object.fromEntries(of.map((x) => [x, [[after, until]]])))).length;
    const gap1 = await ticksOf(assets, from, a.end);
    const gap2 =
      gap1 +
      (await ticksOf(
        assets.filter((x) => x !== '2001'),
        a.end,
        b.end,
      ));
    const rec = new ReplayRecorder(await storedMarkets(svc.te.engine));
    const ws = new WebSocket(svc.replayUrl({ from, to, speed: SPEED }), { headers: { authorization: `Bearer ${svc.key}` } });
    const closed = new Promise<[number, string]>((resolve) => ws.on('close', (code, reason) => resolve([code, reason.toString()])));
    const sent: string[] = [];
    ws.on('open', () => ws.send(JSON.stringify({ assets_ids: assets, type: 'market' })));
    ws.on('message', (data) => {
      rec.push(data.toString());
      // Sent inside the gap that has just begun (GAP of wall time for it to reach the server).
      const act = (msg: object) => {
        sent.push(JSON.stringify(msg));
        ws.send(JSON.stringify(msg));
      };
      if (rec.ticks.length === gap1 && sent.length === 0) act({ assets_ids: ['2001'], operation: 'unsubscribe' });
      if (rec.ticks.length === gap2 && sent.length === 1) act({ assets_ids: ['2001'], operation: 'subscribe' });
    });
    expect(await closed).toEqual([1000, 'replay complete']);
    expect(sent.length).toBe(2);
    const expected = await storedTicks(svc.te.engine, {
      ...Object.fromEntries(assets.filter((x) => x !== '2001').map((x) => [x, [[from, to]]])),
      '2001': [
        [from, a.end],
        [b.end, to],
      ],
    });
    expect(rec.malformed).toBe(0);
    expect(rec.ticks).toEqual(expected);
    // The resubscription's array holds 2001's book as /v1/orderbook gives it at that clock.
    const arrays = rec.frames.filter((f) => f.startsWith('['));
    expect(arrays.length).toBe(2);
    const [book] = JSON.parse(arrays[1]);
    const res = await svc.get(`/v1/orderbook?asset_id=2001&timestamp=${b.end}&limit=100`);
    const ob = (await res.json()).data;
    expect(book).toEqual({
      event_type: 'book',
      market: ob.market,
      asset_id: '2001',
      timestamp: String(ob.timestamp),
      hash: '',
      bids: ob.bids.map((l: { price: number; size: number }) => ({ price: String(l.price), size: String(l.size) })).reverse(),
      asks: ob.asks.map((l: { price: number; size: number }) => ({ price: String(l.price), size: String(l.size) })).reverse(),
    });
  }, 60_000);

  it('every market event type and the trades’ fee rate and hash, with custom_feature_enabled: exactly the stored rows', async () => {
    // Every asset of the two capture files: tick assets, and those only market events name.
    const assets = (
      await svc.te.engine.rows<{ a: string }>(
        `SELECT DISTINCT a FROM (SELECT asset_id AS a, market FROM ticks UNION ALL SELECT asset_id AS a, toString(market) AS market FROM market_events)
         WHERE market NOT IN ${GENERATED} ORDER BY a`,
      )
    ).map((r) => r.a);
    expect(assets.length).toBe(12);
    const windows = Object.fromEntries(assets.map((a) => [a, [[0, Number.MAX_SAFE_INTEGER]] as [number, number][]]));
    const stored = await storedMarketEvents(svc.te.engine, windows, CUSTOM_EVENTS);
    // new_market twice (2 tokens each), market_resolved (2), best_bid_ask, tick_size_change.
    expect(stored.map((e) => e.event).sort()).toEqual([
      'best_bid_ask',
      'market_resolved',
      'market_resolved',
      'new_market',
      'new_market',
      'new_market',
      'new_market',
      'tick_size_change',
    ]);
    const times = [...(await storedTicks(svc.te.engine, windows)).map((k) => k.t), ...stored.map((e) => e.t as number)];
    const [from, to] = [Math.min(...times) - 1, Math.max(...times)];
    // MarketFeed subscribes as the recorder does: with custom_feature_enabled.
    const rec = await recordWithFeed({ from, to, speed: 'max' }, assets);
    expect(rec.malformed).toBe(0);
    expect(rec.ticks).toEqual(await storedTicks(svc.te.engine, windows));
    expect(rec.ticks.filter((k) => k.fee_rate_bps !== null).map((k) => [k.fee_rate_bps, k.tx_hash])).toEqual([
      [0, ''],
      [17, '0x3f9a1c2e5d7b8a60e4c2d1f0b9a8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a190'],
    ]);
    expect(byAsset(rec.marketEvents)).toEqual(byAsset(stored));
    // Each event is sent once, exactly as it was received, however many assets it names.
    const sent = rec.frames.filter((f) => /"event_type":"(new_market|market_resolved|best_bid_ask|tick_size_change)"/.test(f));
    expect(sent.sort()).toEqual([...SAMPLE_LINES.slice(4, 8), EXTRA_LINES[0]].sort());
  }, 60_000);

  it('without custom_feature_enabled: tick_size_change only, as Polymarket sends', async () => {
    const assets = (
      await svc.te.engine.rows<{ a: string }>(`SELECT DISTINCT asset_id AS a FROM market_events WHERE market NOT IN ${GENERATED} ORDER BY a`)
    ).map((r) => r.a);
    const windows = Object.fromEntries(assets.map((a) => [a, [[0, Number.MAX_SAFE_INTEGER]] as [number, number][]]));
    const rec = new ReplayRecorder(await storedMarkets(svc.te.engine));
    const ws = new WebSocket(svc.replayUrl({ from: 1_700_000_000_000, to: 1_800_000_000_000, speed: 'max' }), {
      headers: { authorization: `Bearer ${svc.key}` },
    });
    const closed = new Promise<[number, string]>((resolve) => ws.on('close', (code, reason) => resolve([code, reason.toString()])));
    ws.on('open', () => ws.send(JSON.stringify({ assets_ids: assets, type: 'market' })));
    ws.on('message', (data) => rec.push(data.toString()));
    expect(await closed).toEqual([1000, 'replay complete']);
    expect(rec.malformed).toBe(0);
    expect(byAsset(rec.marketEvents)).toEqual(byAsset(await storedMarketEvents(svc.te.engine, windows, ['tick_size_change'])));
    expect(rec.marketEvents.map((e) => e.event)).toEqual(['tick_size_change']);
  }, 60_000);
});
