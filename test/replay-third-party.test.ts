import { readFileSync } from 'node:fs';
import { type AddressInfo, createServer, connect as netConnect, type Server } from 'node:net';
import tls from 'node:tls';
import { type BookEvent, type PriceChangeEvent, WSSubscriptionManager } from '@nevuamarkets/poly-websockets';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { fixturePath } from './support/fixtures.js';
import { waitFor } from './support/recorder-harness.js';
import { type ReplayService, startReplayService } from './support/replay-service.js';

/**
 * A Polymarket market-channel client nobody here wrote — @nevuamarkets/poly-websockets (npm; pmxt
 * uses it for Polymarket order books) — receives from the replay exactly the frames Polymarket sent
 * (the real capture in the fixtures), except the hash we do not keep.
 *
 * Its URL is a constant (`wss://ws-subscriptions-clob.polymarket.com/ws/market` in
 * dist/WSSubscriptionManager.js, v1.0.2), as in many bots: so the test does what an operator of such
 * a bot would do, route that host to a small reverse proxy that rewrites the path to the replay's. In
 * this process `tls.connect` to that host reaches the proxy over plain TCP (no certificate to forge);
 * the client library itself runs unmodified.
 */
const POLYMARKET_HOST = 'ws-subscriptions-clob.polymarket.com';
const LINES = readFileSync(fixturePath('polymarket/ws-frames.jsonl'), 'utf8').split('\n').filter(Boolean);
const [OPENING, CHANGE, RESENT] = LINES.slice(0, 3).map((l) => JSON.parse(l));
const ASSETS: string[] = OPENING.map((b: { asset_id: string }) => b.asset_id);

let svc: ReplayService;
let proxy: Server;
let replayPath = '';
const realTlsConnect = tls.connect;

beforeAll(async () => {
  svc = await startReplayService(Date.UTC(2027, 0, 1));
  await replayLines(svc.te.engine, LINES, { sourceId: 'replay-third-party' });
  const port = Number(new URL(svc.httpUrl).port);
  proxy = createServer((client) => {
    client.once('data', (head: Buffer) => {
      const upstream = netConnect(port, '127.0.0.1');
      upstream.write(head.toString('latin1').replace(/^GET \/ws\/market /, `GET ${replayPath} `), 'latin1');
      client.pipe(upstream).pipe(client);
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const proxyPort = (proxy.address() as AddressInfo).port;
  tls.connect = ((...args: Parameters<typeof tls.connect>) => {
    const options = args[0] as tls.ConnectionOptions;
    if (typeof options === 'object' && options.host === POLYMARKET_HOST) return netConnect(proxyPort, '127.0.0.1');
    return realTlsConnect(...args);
  }) as typeof tls.connect;
}, 60_000);

afterAll(async () => {
  tls.connect = realTlsConnect;
  proxy?.close();
  await svc?.close();
});

/** A captured frame as the replay sends it: no hash kept, and only the members docs/TIME-MACHINE.md §1 lists. */
const withoutHash = (book: Record<string, unknown>) => ({
  event_type: 'book',
  market: book.market,
  asset_id: book.asset_id,
  timestamp: book.timestamp,
  hash: '',
  bids: book.bids,
  asks: book.asks,
});

it('@nevuamarkets/poly-websockets receives the captured books and price changes', async () => {
  // From the capture's opening books to its re-sent book.
  replayPath = `/v1/replay/market?from=${OPENING[0].timestamp}&to=${RESENT.timestamp}&speed=max&key=${svc.key}`;
  const books: BookEvent[] = [];
  const changes: PriceChangeEvent[] = [];
  const errors: Error[] = [];
  let closed: [number, string] | null = null;
  const manager = new WSSubscriptionManager(
    {
      // Copies: the library's book cache later applies price changes to the objects it handed out.
      onBook: async (events) => void books.push(...structuredClone(events)),
      onPriceChange: async (events) => void changes.push(...structuredClone(events)),
      onError: async (err) => void errors.push(err),
      onWSClose: async (_id, code, reason) => void (closed = [code, reason]),
    },
    { reconnectAndCleanupIntervalMs: 600_000, pendingFlushIntervalMs: 20 },
  );
  await manager.addSubscriptions(ASSETS);
  await waitFor(() => closed !== null, 'the replay to complete', 30_000);
  await manager.clearState();

  expect(closed).toEqual([1000, 'replay complete']);
  expect(errors).toEqual([]);
  // The opening books (the array at the replay clock), then the re-sent book: as captured.
  expect(books).toEqual([...OPENING.map(withoutHash), withoutHash(RESENT)]);
  expect(changes).toEqual([
    {
      event_type: 'price_change',
      market: CHANGE.market,
      timestamp: CHANGE.timestamp,
      price_changes: CHANGE.price_changes.map(({ hash: _hash, ...item }: Record<string, unknown>) => item),
    },
  ]);
}, 60_000);
