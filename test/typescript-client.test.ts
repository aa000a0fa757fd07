import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, createClient } from '../clients/typescript/src/client/index.js';
import * as sdk from '../clients/typescript/src/sdk.gen.js';
import { CLIENT_DIR, generateClient } from '../scripts/generate-ts-client.js';
import { documentText, openApiDocument } from '../scripts/openapi-document.js';
import { fileSeq } from '../src/ingest/normalizer.js';
import { BatchWriter } from '../src/ingest/writer.js';
import { KalshiNormalizer } from '../src/venues/kalshi/normalizer.js';
import { generateStream, replayStream, startTicksApp, type TicksApp } from './support/ticks-fixture.js';

/**
 * The typed TypeScript client in clients/typescript (issue 19): committed, generated from the live
 * document by `npm run client:generate`, and able to call every read endpoint of a running service.
 */

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : [join(dir, name)]));

describe('the committed TypeScript client is current', () => {
  it('was generated from the document the service serves now', async () => {
    const committed = readFileSync(join(CLIENT_DIR, 'openapi.json'), 'utf8');
    // On failure: `npm run client:generate`, then commit clients/typescript.
    expect(documentText(await openApiDocument())).toBe(committed);
  });

  it('is exactly what the pinned generator makes of that document', () => {
    const out = mkdtempSync(join(tmpdir(), 'tickhouse-client-'));
    try {
      generateClient(join(CLIENT_DIR, 'openapi.json'), join(out, 'src'));
      const committed = files(join(CLIENT_DIR, 'src'))
        .map((f) => relative(join(CLIENT_DIR, 'src'), f))
        .sort();
      const fresh = files(join(out, 'src'))
        .map((f) => relative(join(out, 'src'), f))
        .sort();
      expect(fresh).toEqual(committed);
      for (const f of committed) expect(readFileSync(join(out, 'src', f), 'utf8'), f).toBe(readFileSync(join(CLIENT_DIR, 'src', f), 'utf8'));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('every read endpoint through the generated client', () => {
  const NOW = Date.UTC(2026, 5, 10, 12);
  const START = NOW - 3_600_000;
  const ASSET = '7001';
  const KALSHI_TICKER = 'KXTEST-26JUN-T1';
  let t: TicksApp;
  let server: ServerType;
  let base: string;
  let client: Client;

  beforeAll(async () => {
    t = await startTicksApp(NOW);
    const stream = generateStream({
      assets: [
        { asset_id: ASSET, market: '0xc1', outcome: 'Yes', question: 'Typed client?' },
        { asset_id: '7002', market: '0xc1', outcome: 'No', question: 'Typed client?' },
      ],
      start: START,
      events: 300,
      meanGapMs: 5_000,
      seed: 19,
    });
    await replayStream(t.deps, stream, 'ts-client');
    // A Kalshi market's book and a trade (Kalshi's own orderbook and trades routes read them).
    const writer = new BatchWriter(t.deps.engine, { sourceId: 'ts-client-kalshi' });
    const kalshi = new KalshiNormalizer(writer, { seq: fileSeq('ts-client-kalshi') });
    kalshi.push(
      `${new Date(START).toISOString().slice(0, -1)}0000Z {"type":"orderbook_snapshot","sid":1,"seq":1,"msg":{"market_ticker":"${KALSHI_TICKER}",` +
        '"market_id":"m1","yes_dollars_fp":[["0.4200","10.00"]],"no_dollars_fp":[["0.5500","7.00"]]}}',
    );
    kalshi.push(
      `{"type":"trade","sid":2,"msg":{"trade_id":"d91bc706-ee49-470d-82d8-11418bda6fed","market_ticker":"${KALSHI_TICKER}",` +
        `"yes_price_dollars":"0.4300","no_price_dollars":"0.5700","count_fp":"2.00","taker_side":"yes","ts_ms":${START + 1_000}}}`,
    );
    expect(kalshi.stats.ticks).toBe(2);
    await writer.flush();
    await writer.settle();
    server = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    client = createClient({ baseUrl: base, auth: () => t.key });
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await t?.close();
  });

  const range = { asset_id: ASSET, start: START, end: NOW };
  const TRADE_FILTER = JSON.stringify([{ channel: 'last_trade_price', symbols: [ASSET] }]);
  const CLOB = `/v1/clob/{key}/at/${NOW - 1_000_000}`;
  const clobPath = () => ({ key: t.key, instant: String(NOW - 1_000_000) });
  /** Each GET operation of the document: its client call and the same request as a plain URL. */
  const calls: Record<string, { call: () => Promise<{ response: Response; data?: unknown; error?: unknown }>; url: string; text?: boolean; bytes?: boolean }> =
    {
      getHealth: { call: () => sdk.getHealth({ client }), url: '/healthz' },
      getReadiness: { call: () => sdk.getReadiness({ client }), url: '/readyz' },
      getMetrics: { call: () => sdk.getMetrics({ client, parseAs: 'text' }), url: '/metrics', text: true },
      getAccount: { call: () => sdk.getAccount({ client }), url: '/v1/me' },
      getBillingStatus: { call: () => sdk.getBillingStatus({ client }), url: '/v1/billing/status' },
      listMarkets: { call: () => sdk.listMarkets({ client, query: { limit: 5 } }), url: '/v1/markets?limit=5' },
      getMarketStats: { call: () => sdk.getMarketStats({ client }), url: '/v1/markets/stats' },
      getOrderBook: {
        call: () => sdk.getOrderBook({ client, query: { asset_id: ASSET, timestamp: NOW - 1_000_000, limit: 5 } }),
        url: `/v1/orderbook?asset_id=${ASSET}&timestamp=${NOW - 1_000_000}&limit=5`,
      },
      getOrderBookRange: {
        call: () => sdk.getOrderBookRange({ client, query: { asset_id: ASSET, since: START, until: NOW, interval: 600_000, depth: 3 } }),
        url: `/v1/orderbook/range?asset_id=${ASSET}&since=${START}&until=${NOW}&interval=600000&depth=3`,
      },
      getPrice: { call: () => sdk.getPrice({ client, query: { asset_id: ASSET } }), url: `/v1/price?asset_id=${ASSET}` },
      getPricesHistory: {
        call: () => sdk.getPricesHistory({ client, query: { ...range, fidelity: 600 } }),
        url: `/v1/prices-history?asset_id=${ASSET}&start=${START}&end=${NOW}&fidelity=600`,
      },
      getExecutionPrice: {
        call: () => sdk.getExecutionPrice({ client, query: { asset_id: ASSET, side: 'BUY', amount: 250, timestamp: NOW } }),
        url: `/v1/execution-price?asset_id=${ASSET}&side=BUY&amount=250&timestamp=${NOW}`,
      },
      getTicks: {
        call: () => sdk.getTicks({ client, query: { ...range, limit: 50, fields: 'all' } }),
        url: `/v1/ticks?asset_id=${ASSET}&start=${START}&end=${NOW}&limit=50&fields=all`,
      },
      getInstrument: {
        call: () => sdk.getInstrument({ client, query: { asset_id: ASSET, timestamp: START } }),
        url: `/v1/instruments?asset_id=${ASSET}&timestamp=${START}`,
      },
      exportTicks: {
        call: () => sdk.exportTicks({ client, query: range, parseAs: 'text' }),
        url: `/v1/ticks/export?asset_id=${ASSET}&start=${START}&end=${NOW}`,
        text: true,
      },
      exportOrderbook: {
        call: () => sdk.exportOrderbook({ client, query: { ...range, depth: 3 }, parseAs: 'text' }),
        url: `/v1/orderbook/export?asset_id=${ASSET}&start=${START}&end=${NOW}&depth=3`,
        text: true,
      },
      getCandles: {
        call: () => sdk.getCandles({ client, query: { asset_id: ASSET, resolution: '5m', start: START } }),
        url: `/v1/ohlcv?asset_id=${ASSET}&resolution=5m&start=${START}`,
      },
      // Polymarket-compatible: the key is a path segment ({key} below is the test key).
      getClobBook: { call: () => sdk.getClobBook({ client, path: clobPath(), query: { token_id: ASSET } }), url: `${CLOB}/book?token_id=${ASSET}` },
      getClobPrice: {
        call: () => sdk.getClobPrice({ client, path: clobPath(), query: { token_id: ASSET, side: 'SELL' } }),
        url: `${CLOB}/price?token_id=${ASSET}&side=SELL`,
      },
      getClobMidpoint: { call: () => sdk.getClobMidpoint({ client, path: clobPath(), query: { token_id: ASSET } }), url: `${CLOB}/midpoint?token_id=${ASSET}` },
      getClobSpread: { call: () => sdk.getClobSpread({ client, path: clobPath(), query: { token_id: ASSET } }), url: `${CLOB}/spread?token_id=${ASSET}` },
      getClobLastTradePrice: {
        call: () => sdk.getClobLastTradePrice({ client, path: clobPath(), query: { token_id: ASSET } }),
        url: `${CLOB}/last-trade-price?token_id=${ASSET}`,
      },
      getClobTickSize: {
        call: () => sdk.getClobTickSize({ client, path: clobPath(), query: { token_id: ASSET } }),
        url: `${CLOB}/tick-size?token_id=${ASSET}`,
      },
      getClobNegRisk: { call: () => sdk.getClobNegRisk({ client, path: clobPath(), query: { token_id: ASSET } }), url: `${CLOB}/neg-risk?token_id=${ASSET}` },
      getClobPricesHistory: {
        call: () => sdk.getClobPricesHistory({ client, path: clobPath(), query: { market: ASSET, startTs: START / 1000, fidelity: 10 } }),
        url: `${CLOB}/prices-history?market=${ASSET}&startTs=${START / 1000}&fidelity=10`,
      },
      getClobFeeRate: { call: () => sdk.getClobFeeRate({ client, path: clobPath(), query: { token_id: ASSET } }), url: `${CLOB}/fee-rate?token_id=${ASSET}` },
      getClobMarketByToken: {
        call: () => sdk.getClobMarketByToken({ client, path: { ...clobPath(), token_id: ASSET } }),
        url: `${CLOB}/markets-by-token/${ASSET}`,
      },
      getClobMarketInfo: {
        call: () => sdk.getClobMarketInfo({ client, path: { ...clobPath(), condition_id: '0xc1' } }),
        url: `${CLOB}/clob-markets/0xc1`,
      },
      getKalshiOrderbook: {
        call: () => sdk.getKalshiOrderbook({ client, path: { ...clobPath(), ticker: KALSHI_TICKER }, query: { depth: 5 } }),
        url: `/v1/kalshi/{key}/at/${NOW - 1_000_000}/trade-api/v2/markets/${KALSHI_TICKER}/orderbook?depth=5`,
      },
      getKalshiTrades: {
        call: () => sdk.getKalshiTrades({ client, path: clobPath(), query: { ticker: KALSHI_TICKER, limit: 10 } }),
        url: `/v1/kalshi/{key}/at/${NOW - 1_000_000}/trade-api/v2/markets/trades?ticker=${KALSHI_TICKER}&limit=10`,
      },
      getCoverage: { call: () => sdk.getCoverage({ client, query: range }), url: `/v1/coverage?asset_id=${ASSET}&start=${START}&end=${NOW}` },
      getTardisDataset: {
        call: () =>
          sdk.getTardisDataset({
            client,
            path: { exchange: 'polymarket', data_type: 'trades', year: '2026', month: '06', day: '09', file: `${ASSET}.csv.gz` },
            parseAs: 'arrayBuffer',
          }),
        url: `/v1/tardis/datasets/polymarket/trades/2026/06/09/${ASSET}.csv.gz`,
        bytes: true,
      },
      getTardisDataFeed: {
        call: () =>
          sdk.getTardisDataFeed({
            client,
            path: { exchange: 'polymarket' },
            query: { from: new Date(START).toISOString(), filters: TRADE_FILTER, sliceSize: 30 },
          }),
        url: `/v1/tardis/data-feeds/polymarket?from=${new Date(START).toISOString()}&filters=${encodeURIComponent(TRADE_FILTER)}&sliceSize=30`,
        text: true,
      },
    };

  it('has a call for every GET operation of the document', async () => {
    const doc = JSON.parse(readFileSync(join(CLIENT_DIR, 'openapi.json'), 'utf8')) as { paths: Record<string, Record<string, { operationId: string }>> };
    // The sandbox invoice page is HTML for a browser, not data; the replay is a WebSocket handshake
    // (test/replay-*.test.ts drive it with WebSocket clients).
    const reads = Object.values(doc.paths)
      .flatMap((ops) => (ops.get ? [ops.get.operationId] : []))
      .filter((id) => id !== 'getSandboxInvoice' && id !== 'replayMarket');
    expect(Object.keys(calls).sort()).toEqual(reads.sort());
  });

  for (const [operationId, { call, url, text, bytes }] of Object.entries(calls)) {
    it(`${operationId} answers exactly what a plain request answers`, async () => {
      const viaClient = await call();
      const plain = await fetch(`${base}${url.replace('{key}', t.key)}`, { headers: { authorization: `Bearer ${t.key}` } });
      expect(viaClient.response.status).toBe(200);
      expect(plain.status).toBe(200);
      expect(viaClient.error).toBeUndefined();
      if (bytes) {
        // A file download (a .csv.gz): the same bytes.
        expect(Buffer.from(viaClient.data as ArrayBuffer)).toEqual(Buffer.from(await plain.arrayBuffer()));
      } else if (text) {
        const body = await plain.text();
        // Metrics move between two scrapes; the exposition's metric names do not.
        if (operationId === 'getMetrics') expect(names(viaClient.data as string)).toEqual(names(body));
        else expect(viaClient.data).toBe(body);
      } else {
        expect(viaClient.data).toEqual(await plain.json());
      }
      // The seeded Kalshi trade is served, with the id Kalshi gave it.
      if (operationId === 'getKalshiTrades') {
        expect(viaClient.data).toMatchObject({ trades: [{ trade_id: 'd91bc706-ee49-470d-82d8-11418bda6fed', yes_price_dollars: '0.4300' }], cursor: '' });
      }
    });
  }
});

const names = (exposition: string) => [...new Set(exposition.split('\n').filter((l) => l.startsWith('# TYPE')))].sort();
