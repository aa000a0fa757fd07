import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { fileSeq } from '../src/ingest/normalizer.js';
import { BatchWriter } from '../src/ingest/writer.js';
import { signedHeaders } from '../src/venues/kalshi/auth.js';
import { KalshiAuthError } from '../src/venues/kalshi/markets.js';
import { KalshiNormalizer } from '../src/venues/kalshi/normalizer.js';
import type { KalshiRecorderOptions } from '../src/venues/kalshi/options.js';
import { type KalshiRecorder, startKalshiRecorder } from '../src/venues/kalshi/recorder.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { type KalshiServer, kalshiMarket, seeded, startKalshiServer } from './support/kalshi-server.js';
import { captureLog, storedRows, truncateIngestTables, waitFor } from './support/recorder-harness.js';
import { json } from './support/ticks-fixture.js';

/**
 * The Kalshi recorder end to end (docs/KALSHI.md): markets discovered over signed REST pages, books and
 * trades over the signed WebSocket of a local server speaking Kalshi's protocol, stored in the same tables
 * as Polymarket's, and read back through /v1/orderbook and /v1/ticks. The reference is a model written here
 * from Kalshi's docs alone — it reads the messages the server sent, keeps the YES and NO bid ladders in
 * integer units and turns them into bids (YES) and asks (1 − NO) — and imports nothing from src/.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const INSTANTS = 500;

let app: DataApp;
let server: KalshiServer;
let recorder: KalshiRecorder | null = null;
let dir: string;
let keys: { publicKey: KeyObject; privateKey: KeyObject };

const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 });

function options(privateKey: KeyObject, overrides: Partial<KalshiRecorderOptions> = {}): KalshiRecorderOptions {
  return {
    credentials: { keyId: 'a952bcbe-ec3b-4b5b-b8f9-11dae589608c', privateKey },
    wsUrl: server.wsUrl,
    restUrl: server.restUrl,
    tickers: null,
    maxAssets: 0,
    archiveDir: dir,
    tickersPerCommand: 2,
    reconnectMinMs: 20,
    reconnectMaxMs: 200,
    batchRows: 20_000,
    batchAgeMs: 50,
    maxBufferedRows: 500_000,
    retryMinMs: 20,
    retryMaxMs: 200,
    discoveryIntervalMs: 0,
    statusIntervalMs: 0,
    ...overrides,
  };
}

// ---- The model: Kalshi's book from its docs, on the messages as sent ----

/** "0.4550" → 4550, "-12.50" → -1250: fixed point read digit by digit, as the docs define the strings. */
function fixed(s: string, decimals: number): number {
  const negative = s.startsWith('-');
  const [whole, fraction = ''] = (negative ? s.slice(1) : s).split('.');
  const v = Number(whole) * 10 ** decimals + Number(fraction.padEnd(decimals, '0'));
  return negative ? -v : v;
}

interface ModelBook {
  yes: Map<number, number>;
  no: Map<number, number>;
}

/** The book as tickhouse serves it: bids = YES bids (best first), asks = 1 − NO bids (best = lowest first). */
function served(book: ModelBook) {
  const bids = [...book.yes].sort((a, b) => b[0] - a[0]).map(([p, c]) => ({ price: p / 10_000, size: c / 100 }));
  const asks = [...book.no]
    .map(([p, c]) => [10_000 - p, c])
    .sort((a, b) => a[0] - b[0])
    .map(([p, c]) => ({ price: p / 10_000, size: c / 100 }));
  return { bids, asks, best_bid: bids[0]?.price ?? 0, best_ask: asks[0]?.price ?? 1 };
}

type ModelEvent =
  | { kind: 'snapshot'; ticker: string; sid: number; yes: [string, string][]; no: [string, string][] }
  | { kind: 'delta'; ticker: string; sid: number; seq: number; t: number; side: 'yes' | 'no'; price: string; delta: string }
  | { kind: 'trade'; ticker: string; t: number; price: string; count: string; taker: 'yes' | 'no'; id: string };

function modelEvents(sent: readonly string[]): ModelEvent[] {
  const out: ModelEvent[] = [];
  for (const text of sent) {
    const m = JSON.parse(text);
    if (m.type === 'orderbook_snapshot')
      out.push({ kind: 'snapshot', ticker: m.msg.market_ticker, sid: m.sid, yes: m.msg.yes_dollars_fp ?? [], no: m.msg.no_dollars_fp ?? [] });
    else if (m.type === 'orderbook_delta')
      out.push({
        kind: 'delta',
        ticker: m.msg.market_ticker,
        sid: m.sid,
        seq: m.seq,
        t: m.msg.ts_ms,
        side: m.msg.side,
        price: m.msg.price_dollars,
        delta: m.msg.delta_fp,
      });
    else if (m.type === 'trade')
      out.push({
        kind: 'trade',
        ticker: m.msg.market_ticker,
        t: m.msg.ts_ms,
        price: m.msg.yes_price_dollars,
        count: m.msg.count_fp,
        taker: m.msg.taker_side,
        id: m.msg.trade_id,
      });
  }
  return out;
}

/** Applies a snapshot (replaces both ladders) or a delta (adds to one level; 0 or less removes it). */
function apply(book: ModelBook, e: ModelEvent): void {
  if (e.kind === 'snapshot') {
    book.yes = new Map(e.yes.map(([p, c]) => [fixed(p, 4), fixed(c, 2)]));
    book.no = new Map(e.no.map(([p, c]) => [fixed(p, 4), fixed(c, 2)]));
  } else if (e.kind === 'delta') {
    const ladder = e.side === 'yes' ? book.yes : book.no;
    const size = (ladder.get(fixed(e.price, 4)) ?? 0) + fixed(e.delta, 2);
    if (size > 0) ladder.set(fixed(e.price, 4), size);
    else ladder.delete(fixed(e.price, 4));
  }
}

// ---- The feed: a seeded stream of deltas and trades over a price grid ----

const TICKERS = ['FED-23DEC-T3.00', 'KXBTCD-26MAY1417-T94999.99', 'KXETHD-26MAY1417-T3749.99'];
/** Cents and a few deci-cent prices (price_level_structure deci_cent), as Kalshi's grids have them. */
const GRID = [...Array.from({ length: 40 }, (_, i) => (0.3 + i * 0.01).toFixed(4)), '0.4550', '0.5025', '0.0001', '0.9999'];

function sendFeed(n: number, t0: number, seed: number): { end: number } {
  const rand = seeded(seed);
  const book = new Map(TICKERS.map((t) => [t, { yes: new Map<string, number>(), no: new Map<string, number>() }]));
  let t = t0;
  for (let i = 0; i < n; i++) {
    t += 1 + Math.floor(rand() * 5);
    const ticker = TICKERS[Math.floor(rand() * TICKERS.length)];
    if (rand() < 0.08) {
      const price = GRID[Math.floor(rand() * 40)];
      server.trade({
        trade_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        market_ticker: ticker,
        yes_price_dollars: price,
        no_price_dollars: (1 - Number(price)).toFixed(4),
        count_fp: (1 + Math.floor(rand() * 50000) / 100).toFixed(2),
        taker_side: rand() < 0.5 ? 'yes' : 'no',
        ts: Math.floor(t / 1000),
        ts_ms: t,
      });
      continue;
    }
    const side = rand() < 0.5 ? 'yes' : 'no';
    const price = GRID[Math.floor(rand() * GRID.length)];
    const ladder = book.get(ticker)![side];
    const resting = ladder.get(price) ?? 0;
    // Adds, partial cancels, exact removals and over-removals (a level never goes below nothing).
    const r = rand();
    const delta =
      resting === 0 || r < 0.55
        ? 1 + Math.floor(rand() * 100000)
        : r < 0.8
          ? -Math.max(1, Math.floor(resting * rand()))
          : r < 0.95
            ? -resting
            : -(resting + 500);
    ladder.set(price, Math.max(0, resting + delta));
    const fp = `${delta < 0 ? '-' : ''}${Math.floor(Math.abs(delta) / 100)}.${String(Math.abs(delta) % 100).padStart(2, '0')}`;
    expect(server.delta(ticker, side, price, fp, t)).toBe(true);
  }
  return { end: t };
}

beforeAll(async () => {
  keys = rsa();
  app = await startDataApp(Date.now());
  server = await startKalshiServer(keys.publicKey, 2);
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-kalshi-'));
  server.setMarkets([
    kalshiMarket(TICKERS[0], 'FED-23DEC', 'Fed funds above 3.00%'),
    kalshiMarket(TICKERS[1], 'KXBTCD-26MAY1417', 'Bitcoin above 94,999.99'),
    { ...kalshiMarket('KXOLD-25JAN01-T1', 'KXOLD-25JAN01', 'closed'), status: 'closed' },
    kalshiMarket(TICKERS[2], 'KXETHD-26MAY1417', 'Ether above 3,749.99'),
  ]);
  // The first market starts from Kalshi's own snapshot example; the others from made-up ladders.
  server.setBook(
    TICKERS[0],
    [
      ['0.0800', '300.00'],
      ['0.2200', '333.00'],
    ],
    [
      ['0.5400', '20.00'],
      ['0.5600', '146.00'],
    ],
  );
  server.setBook(TICKERS[1], [['0.4200', '10.00']], [['0.5500', '7.25']]);
});

afterAll(async () => {
  await recorder?.stop();
  await server?.close();
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

const book = async (ticker: string, at: number) => json(await app.get(`/v1/orderbook?asset_id=kalshi:${ticker}&timestamp=${at}&limit=100`));

describe('a recorded Kalshi stream', () => {
  let feedStart = 0;
  let feedEnd = 0;

  it('discovers the open markets over signed REST pages and subscribes them on the signed socket', async () => {
    recorder = await startKalshiRecorder(app.deps.engine, options(keys.privateKey));
    await waitFor(() => recorder!.status().sink.stored.ticks === 3, 'the three snapshots stored');
    // Two pages of two (the closed market filtered by status=open), every request signed.
    expect(server.requests.filter((r) => r.startsWith('GET /trade-api/v2/markets'))).toEqual([
      'GET /trade-api/v2/markets?limit=1000&status=open',
      'GET /trade-api/v2/markets?limit=1000&status=open&cursor=2',
    ]);
    expect(server.refusals).toBe(0);
    expect(server.commands).toEqual([
      { id: 1, cmd: 'subscribe', params: { channels: ['orderbook_delta', 'trade'], market_tickers: [TICKERS[0], TICKERS[1]] } },
      { id: 2, cmd: 'subscribe', params: { channels: ['orderbook_delta', 'trade'], market_tickers: [TICKERS[2]] } },
    ]);
    expect(recorder.status()).toMatchObject({ connected: true, assets: 3, live: 3 });
  });

  it(`serves /v1/orderbook at ${INSTANTS} instants equal to the model of Kalshi's book`, async () => {
    feedStart = Date.now() + 5_000;
    ({ end: feedEnd } = sendFeed(4_000, feedStart, 40));
    const sent = modelEvents(server.sent);
    const expectedTicks = sent.length;
    await waitFor(() => recorder!.status().sink.stored.ticks === expectedTicks && recorder!.status().sink.pending === 0, 'every message stored', 60_000);
    expect(recorder!.status().normalizer).toMatchObject({ malformed: 0, skipped: 0, gaps: 0 });
    app.clock.set(feedEnd + 3_600_000);

    // 500 instants over the feed, each on one market, some exactly at a message's time.
    const rand = seeded(7);
    const instants = Array.from({ length: INSTANTS }, (_, i) => ({
      ticker: TICKERS[i % 3],
      at:
        i % 10 === 0
          ? (sent.filter((e) => e.kind === 'delta')[Math.floor(rand() * 1000)] as { t: number }).t
          : feedStart + Math.floor(rand() * (feedEnd - feedStart + 50)),
    }));
    let compared = 0;
    for (const { ticker, at } of instants) {
      const model: ModelBook = { yes: new Map(), no: new Map() };
      // The snapshots came before the feed; the deltas count up to the instant (t ≤ at), in the order sent.
      for (const e of sent) if (e.ticker === ticker && (e.kind === 'snapshot' || (e.kind === 'delta' && e.t <= at))) apply(model, e);
      const want = served(model);
      const got = (await book(ticker, at)).data;
      expect({ bids: got.bids, asks: got.asks, best_bid: got.best_bid, best_ask: got.best_ask }, `${ticker} at ${at}`).toEqual(want);
      expect(got.asset_id).toBe(`kalshi:${ticker}`);
      compared++;
    }
    expect(compared).toBe(INSTANTS);
  });

  it('serves /v1/ticks for a market: its book, every delta as the new size of its level, every trade at the YES price', async () => {
    const ticker = TICKERS[1];
    const sent = modelEvents(server.sent).filter((e) => e.ticker === ticker);
    const model: ModelBook = { yes: new Map(), no: new Map() };
    const want = sent.map((e) => {
      apply(model, e);
      const s = served(model);
      if (e.kind === 'snapshot') return { event: 'book', price: 0, size: 0, best_bid: s.best_bid, best_ask: s.best_ask, book_side: '', taker_side: '' };
      if (e.kind === 'trade') {
        return {
          t: e.t,
          event: 'last_trade_price',
          price: fixed(e.price, 4) / 10_000,
          size: fixed(e.count, 2) / 100,
          best_bid: s.best_bid,
          best_ask: s.best_ask,
          book_side: '',
          taker_side: e.taker === 'yes' ? 'buy' : 'sell',
        };
      }
      const ladder = e.side === 'yes' ? model.yes : model.no;
      const level = fixed(e.price, 4);
      return {
        t: e.t,
        event: 'price_change',
        price: (e.side === 'yes' ? level : 10_000 - level) / 10_000,
        size: (ladder.get(level) ?? 0) / 100,
        best_bid: s.best_bid,
        best_ask: s.best_ask,
        book_side: e.side === 'yes' ? 'bid' : 'ask',
        taker_side: '',
      };
    });
    const body = await json(
      await app.get(`/v1/ticks?asset_id=kalshi:${ticker}&start=${feedStart - 600_000}&end=${feedEnd + 1}&limit=100000&fields=book_side,taker_side`),
    );
    const got = body.data.map(({ t, event, price, size, best_bid, best_ask, book_side, taker_side, side }: Record<string, unknown>) => ({
      ...(event === 'book' ? {} : { t }),
      event,
      price,
      size,
      best_bid,
      best_ask,
      book_side,
      taker_side,
      side,
    }));
    expect(got).toEqual(want.map((w) => ({ ...w, side: 'YES' })));
    expect(got.length).toBeGreaterThan(1000);
    // Each trade keeps the id Kalshi gave it (in the column of Polymarket's transaction hash), in the order sent.
    const ids = await app.deps.engine.rows<{ tx_hash: string }>(
      `SELECT tx_hash FROM ticks WHERE asset_id = {a:String} AND event = 'last_trade_price' ORDER BY t, seq`,
      { params: { a: `kalshi:${ticker}` } },
    );
    const sentIds = sent.flatMap((e) => (e.kind === 'trade' ? [e.id] : []));
    expect(sentIds.length).toBeGreaterThan(50);
    expect(ids.map((r) => r.tx_hash)).toEqual(sentIds);
  });

  it('records a seq gap as a coverage gap of the subscription’s markets, resubscribes, and serves the fresh snapshot after it', async () => {
    const [A, B, C] = TICKERS;
    const before = server.sent.length;
    const gapAt = Date.now();
    // One delta of A is lost; the next one arrives with a seq one too far.
    server.loseNextDelta(A);
    expect(server.delta(A, 'yes', '0.3500', '77.00', feedEnd + 10)).toBe(true);
    expect(server.delta(A, 'yes', '0.3600', '5.00', feedEnd + 20)).toBe(true);
    await waitFor(() => recorder!.status().resubscribes === 1 && server.commands.length === 4, 'the unsubscribe and the new subscription');
    expect(server.commands.slice(2)).toEqual([
      { id: 3, cmd: 'unsubscribe', params: { sids: [1] } },
      { id: 4, cmd: 'subscribe', params: { channels: ['orderbook_delta'], market_tickers: [A, B] } },
    ]);
    await waitFor(() => server.sent.slice(before).filter((m) => m.includes('"orderbook_snapshot"')).length === 2, 'the fresh snapshots');
    // After the resubscription, A moves on.
    expect(server.delta(A, 'no', '0.6100', '12.34', feedEnd + 30)).toBe(true);
    const sent = modelEvents(server.sent);
    await waitFor(async () => {
      const got = await app.get(`/v1/orderbook?asset_id=kalshi:${A}&timestamp=${feedEnd + 30}&limit=100`);
      return got.status === 200 && (await got.json()).data.timestamp === feedEnd + 30;
    }, 'the delta after the gap stored');
    // Ticks become visible before the batch's other tables (capture records) are written: wait for the whole batch.
    await waitFor(() => recorder!.status().sink.pending === 0, 'every row of the batch stored');

    // The model: the fresh snapshot (which states the lost delta), then what followed it.
    const model: ModelBook = { yes: new Map(), no: new Map() };
    const fresh = sent.map((e) => e.kind === 'snapshot' && e.ticker === A).lastIndexOf(true);
    for (const e of sent.slice(fresh)) if (e.ticker === A) apply(model, e);
    const got = (await book(A, feedEnd + 3_600_000)).data;
    expect({ bids: got.bids, asks: got.asks, best_bid: got.best_bid, best_ask: got.best_ask }).toEqual(served(model));
    // What the deltas alone would give lacks the lost one: the fresh snapshot is what brought it.
    const deltasOnly: ModelBook = { yes: new Map(), no: new Map() };
    for (const e of sent.slice(0, fresh)) if (e.ticker === A) apply(deltasOnly, e);
    expect((model.yes.get(3500) ?? 0) - (deltasOnly.yes.get(3500) ?? 0)).toBe(7700);

    // Capture records: A and B (one subscription) closed at the gap and re-opened, C untouched.
    const records = async (asset: string) =>
      (
        await app.deps.engine.rows<{ kind: string; ms: number }>(
          `SELECT toString(kind) AS kind, toUnixTimestamp64Milli(t) AS ms FROM capture_events WHERE asset_id = {a:String} ORDER BY t, seq
           SETTINGS output_format_json_quote_64bit_integers = 0`,
          { params: { a: `kalshi:${asset}` } },
        )
      ).map((r) => ({ kind: r.kind, t: Number(r.ms) }));
    for (const asset of [A, B])
      expect((await records(asset)).map((r) => r.kind)).toEqual(['subscribe', 'open', 'resync', 'close', 'subscribe', 'open', 'resync']);
    expect((await records(C)).map((r) => r.kind)).toEqual(['subscribe', 'open', 'resync']);
    const a = await records(A);
    const closed = a[3].t;
    const reopened = a[5].t;
    expect(closed).toBeGreaterThanOrEqual(gapAt);
    const coverage = (await json(await app.get(`/v1/coverage?asset_id=kalshi:${A}&start=${closed - 1000}&end=${reopened + 1000}`))).data;
    expect(coverage.gaps).toContainEqual({ from: closed, to: reopened, reason: 'disconnected' });
    expect(coverage.reconnects).toContainEqual({ t: reopened, resynced: true });
  });

  it('archives every message with its receive time (kalshi-YYYY-MM-DD.jsonl.gz), and the archive normalized again stores the same rows', async () => {
    await recorder!.stop();
    recorder = null;
    const files = readdirSync(dir).sort();
    expect(files.length).toBeGreaterThan(0);
    expect(files.every((f) => /^kalshi-\d{4}-\d{2}-\d{2}\.jsonl\.gz$/.test(f))).toBe(true);
    const engine = app.deps.engine;
    const live = await storedRows(engine);
    const captures = async () =>
      engine.rows(`SELECT asset_id, toUnixTimestamp64Milli(t) AS t, run, socket, toString(kind) AS kind FROM capture_events ORDER BY asset_id, t, seq
        SETTINGS output_format_json_quote_64bit_integers = 0`);
    const liveCaptures = await captures();
    await truncateIngestTables(engine);
    const writer = new BatchWriter(engine, { sourceId: 'kalshi-archive' });
    const normalizer = new KalshiNormalizer(writer, { seq: fileSeq('kalshi-archive') });
    for (const file of files)
      for (const line of gunzipSync(readFileSync(join(dir, file)))
        .toString('utf8')
        .split('\n'))
        normalizer.push(line);
    await writer.flush();
    const replayed = await storedRows(engine);
    expect(normalizer.stats).toMatchObject({ malformed: 0, gaps: 1 });
    expect(replayed.ticks).toEqual(live.ticks);
    expect(replayed.snapshots).toEqual(live.snapshots);
    expect(await captures()).toEqual(liveCaptures);
    expect(live.ticks.length).toBeGreaterThan(4000);
  });
});

describe('the local Kalshi server', () => {
  it("answers Kalshi's own subscribe examples (market_ticker and market_tickers) as the AsyncAPI document says", async () => {
    const commands = readFileSync(new URL('./fixtures/kalshi/commands.jsonl', import.meta.url), 'utf8')
      .split('\n')
      .filter(Boolean);
    const ws = new WebSocket(server.wsUrl, { headers: signedHeaders({ keyId: 'k', privateKey: keys.privateKey }, 'GET', '/trade-api/ws/v2') });
    const got: Record<string, unknown>[] = [];
    ws.on('message', (data) => got.push(JSON.parse(data.toString())));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    for (const c of commands) ws.send(c);
    await waitFor(() => got.length === 6, 'the answers');
    ws.close();
    const snapshot = (ticker: string, sid: number, seq: number) => ({
      type: 'orderbook_snapshot',
      sid,
      seq,
      msg: { market_ticker: ticker, market_id: expect.any(String) },
    });
    expect(got).toEqual([
      { id: 1, type: 'subscribed', msg: { channel: 'orderbook_delta', sid: 1 } },
      snapshot('CPI-22DEC-TN0.1', 1, 1),
      { id: 2, type: 'subscribed', msg: { channel: 'orderbook_delta', sid: 2 } },
      expect.objectContaining({
        type: 'orderbook_snapshot',
        sid: 2,
        seq: 1,
        msg: expect.objectContaining({ market_ticker: 'FED-23DEC-T3.00', yes_dollars_fp: expect.any(Array) }),
      }),
      snapshot('CORIVER-2024-T1030', 2, 2),
      { id: 2, type: 'subscribed', msg: { channel: 'ticker', sid: 3 } },
    ]);
  });
});

describe('a key Kalshi does not accept', () => {
  it('is refused by the REST discovery: the recorder says so and does not start', async () => {
    const log = captureLog();
    try {
      const refusedBefore = server.refusals;
      await expect(startKalshiRecorder(app.deps.engine, options(rsa().privateKey, { archiveDir: null }))).rejects.toBeInstanceOf(KalshiAuthError);
      expect(server.refusals).toBe(refusedBefore + 1);
      expect(log.lines.some((l) => String(l.msg).startsWith('Kalshi refused the API key (HTTP 401'))).toBe(true);
    } finally {
      log.stop();
    }
  });

  it('is refused at the WebSocket handshake: the recorder says so and keeps retrying', async () => {
    const log = captureLog();
    try {
      recorder = await startKalshiRecorder(app.deps.engine, options(keys.privateKey, { archiveDir: null, tickers: [TICKERS[2]] }));
      await waitFor(() => recorder!.status().connected, 'the socket');
      // Kalshi no longer accepts the key (revoked): the next handshake is refused with 401.
      server.setPublicKey(rsa().publicKey);
      server.dropAll();
      await waitFor(() => log.lines.some((l) => l.msg === 'Kalshi refused the API key on the WebSocket handshake' && l.status === 401), 'the refusal logged');
      expect(recorder.status().refused).toBeGreaterThanOrEqual(1);
      // Accepted again, it reconnects and resubscribes.
      server.setPublicKey(keys.publicKey);
      const books = recorder.status().normalizer.snapshots;
      await waitFor(() => recorder!.status().connected && recorder!.status().assets === 1, 'the reconnection');
      // The new connection numbers its subscriptions from 1 again: its snapshot is a fresh start, not a seq gap.
      await waitFor(() => recorder!.status().normalizer.snapshots === books + 1, 'the snapshot of the new connection');
      expect(recorder.status().normalizer).toMatchObject({ gaps: 0, skipped: 0 });
      expect(recorder.status().resubscribes).toBe(0);
    } finally {
      log.stop();
      server.setPublicKey(keys.publicKey);
      await recorder?.stop();
      recorder = null;
    }
  });
});

describe('npm run record -- --venue kalshi', () => {
  const record = (env: Record<string, string>) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'src/record.ts', '--venue', 'kalshi', '--all'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: join(dir, 'unused'), LOG_LEVEL: 'error', ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });

  it('without a key, or with a file that holds none, ends with one clear line (exit 1, no stack)', () => {
    const missing = record({});
    expect(missing.status).toBe(1);
    expect(missing.stderr).toBe(
      'tickhouse: --venue kalshi needs an API key: set KALSHI_API_KEY_ID and KALSHI_PRIVATE_KEY_PATH (the key id and the path of its RSA private key, PEM)\n',
    );
    const file = join(tmpdir(), `tickhouse-not-a-key-${process.pid}.pem`);
    writeFileSync(file, 'not a key\n');
    try {
      const bad = record({ KALSHI_API_KEY_ID: 'k', KALSHI_PRIVATE_KEY_PATH: file });
      expect(bad.status).toBe(1);
      expect(bad.stderr).toBe(`tickhouse: KALSHI_PRIVATE_KEY_PATH: ${file} holds no PEM private key\n`);
    } finally {
      rmSync(file, { force: true });
    }
  });
});
