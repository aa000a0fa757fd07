import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Recorder, startRecorder } from '../src/ingest/recorder/recorder.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { type GammaServer, startGammaServer } from './support/gamma-server.js';
import { type PolymarketWsServer, startPolymarketWsServer } from './support/polymarket-ws-server.js';
import { recorderOptions, waitFor } from './support/recorder-harness.js';
import { VenueFeed, venueMarkets } from './support/venue-feed.js';

/**
 * The whole-venue path at a scale a test affords (the bench, scripts/bench/venue.ts, runs 60,000 tokens
 * over 120 sockets): `--all` discovers 2,000 tokens through Gamma's keyset pages, subscribes them 500 per
 * socket in frames of at most 100 ids on a market channel that enforces both limits, and stores exactly
 * what the feed sent: every book of the initial dumps and every event after them, row for row.
 */
const MARKETS = 1_000;
const EVENTS = 20_000;
const T0 = 1_790_000_000_000;

let te: TestEngine;
let gamma: GammaServer;
let ws: PolymarketWsServer;
let recorder: Recorder | null = null;

beforeAll(async () => {
  te = await createTestEngine();
  gamma = await startGammaServer();
  ws = await startPolymarketWsServer();
});

afterAll(async () => {
  await recorder?.stop();
  await ws?.close();
  await gamma?.close();
  await te?.close();
});

it('records every token of the venue and stores exactly what the feed sent', async () => {
  const markets = venueMarkets(MARKETS, 3);
  gamma.setMarkets(markets.map((m) => m.gamma));
  const feed = new VenueFeed(ws, markets, 3);
  feed.setBooks(markets, T0);
  recorder = await startRecorder(te.engine, recorderOptions({ wsUrl: ws.url, gammaUrl: gamma.url, assets: null }));
  const tokens = 2 * MARKETS;
  await waitFor(() => ws.open().reduce((n, c) => n + c.assets.size, 0) === tokens && ws.counts.events.book === tokens, 'every subscription and its book');
  // Bursts of events at successive exchange times, each flushed to the sockets before the next.
  let sent = 0;
  for (let i = 0; sent < EVENTS; i++) {
    sent += feed.send(Math.min(4_000, EVENTS - sent), T0 + 1 + i);
    await ws.drained();
  }
  const expectedTicks = tokens + feed.counts.price_change + feed.counts.last_trade_price;
  await waitFor(() => recorder!.status().sink.stored.ticks === expectedTicks, 'every event stored', 60_000);

  expect(ws.open().map((c) => c.assets.size)).toEqual([500, 500, 500, 500]);
  expect(ws.connections.every((c) => c.ignored.size === 0 && c.closedBy === null)).toBe(true);
  expect(recorder.status()).toMatchObject({ live: tokens, assets: tokens, silent: 0, sockets: 4, connected: 4, malformed: 0, reconnects: 0 });
  expect(gamma.requests.filter((r) => r.startsWith('/markets/keyset'))).toHaveLength(10);

  // The reference: what the frames the feed sent say, read from the frames themselves (docs/INGEST.md §2).
  type Row = [string, number, string, number, number];
  const want: Row[] = [];
  for (const text of ws.sent) {
    const frame = JSON.parse(text);
    for (const e of Array.isArray(frame) ? frame : [frame]) {
      if (e.event_type === 'book') want.push([e.asset_id, Number(e.timestamp), 'book', 0, 0]);
      else if (e.event_type === 'last_trade_price') want.push([e.asset_id, Number(e.timestamp), 'last_trade_price', Number(e.price), Number(e.size)]);
      else for (const c of e.price_changes) want.push([c.asset_id, Number(e.timestamp), 'price_change', Number(c.price), Number(c.size)]);
    }
  }
  const got = (
    await te.engine.rows<{ asset_id: string; t: number; event: string; price: number; size: number }>(
      `SELECT asset_id, toUnixTimestamp64Milli(t) AS t, toString(event) AS event, price, size FROM ticks ORDER BY asset_id, t, seq
       SETTINGS output_format_json_quote_64bit_integers = 0`,
    )
  ).map((r): Row => [r.asset_id, Number(r.t), r.event, Number(r.price), Number(r.size)]);
  const order = (a: Row, b: Row) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]);
  // Per asset, events keep their arrival order (a stable sort of the sent list by asset and time).
  expect(got).toEqual([...want].sort(order));
  expect(got).toHaveLength(expectedTicks);

  const [protocols] = await te.engine.rows<{ v1: number; v2: number }>(
    "SELECT toUInt32(countIf(protocol_version = 'v1')) AS v1, toUInt32(countIf(protocol_version = 'v2')) AS v2 FROM market_protocols FINAL",
  );
  expect(protocols).toEqual({ v1: 1_600, v2: 400 });
}, 180_000);
