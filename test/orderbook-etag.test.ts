import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { type FrameStream, generateFrames } from './support/book-frames.js';
import { type DataApp, startDataApp } from './support/data-app.js';

/**
 * Historical answers (an instant before the asset's newest stored event) of /v1/orderbook,
 * /v1/price and /v1/execution-price carry an ETag (a digest of the body) and an immutable
 * Cache-Control; If-None-Match with it gets a 304, still counted. Other answers carry neither.
 */
let app: DataApp;
let stream: FrameStream;
let asset: string;
let times: number[];

beforeAll(async () => {
  stream = generateFrames(99, 400);
  app = await startDataApp(stream.end + 86_400_000);
  await replayLines(app.te.engine, stream.lines, { sourceId: 'etag', checkpoints: { changes: 25, ms: 60_000 } });
  asset = stream.assets[0];
  const rows = await app.te.engine.compactRows<[number]>(
    `SELECT DISTINCT toUnixTimestamp64Milli(t) FROM book_events WHERE asset_id = {a:String} ORDER BY 1 SETTINGS output_format_json_quote_64bit_integers = 0`,
    { params: { a: asset } },
  );
  times = rows.map((r) => r[0]);
}, 120_000);

afterAll(() => app?.close());

const IMMUTABLE = 'private, max-age=31536000, immutable';
const digest = (body: string) => `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;

describe('ETag on historical answers', () => {
  const paths = () => {
    const at = times[Math.floor(times.length / 2)] + 1;
    return [
      `/v1/orderbook?asset_id=${asset}&timestamp=${at}&limit=5`,
      `/v1/price?asset_id=${asset}&timestamp=${at}`,
      `/v1/execution-price?asset_id=${asset}&side=BUY&amount=10&timestamp=${at}`,
    ];
  };

  it('200 with ETag = digest of the body and Cache-Control immutable; If-None-Match gets an empty 304, still counted', async () => {
    for (const path of paths()) {
      const res = await app.get(path);
      expect(res.status, path).toBe(200);
      const body = await res.text();
      expect(res.headers.get('etag')).toBe(digest(body));
      expect(res.headers.get('cache-control')).toBe(IMMUTABLE);
      const remaining = Number(res.headers.get('x-ratelimit-remaining'));

      const again = await app.get(path, { 'if-none-match': res.headers.get('etag')! });
      expect(again.status, path).toBe(304);
      expect(await again.text()).toBe('');
      expect(again.headers.get('etag')).toBe(digest(body));
      expect(again.headers.get('cache-control')).toBe(IMMUTABLE);
      expect(again.headers.get('x-ratelimit-limit')).toBe('500000');
      expect(Number(again.headers.get('x-ratelimit-remaining'))).toBe(remaining - 1);
      expect(again.headers.get('x-ratelimit-reset')).toBe(res.headers.get('x-ratelimit-reset'));
      expect(again.headers.get('x-request-id')).toBeTruthy();

      // A list, a weak form and `*` match too; another tag does not.
      expect((await app.get(path, { 'if-none-match': `"other", W/${digest(body)}` })).status).toBe(304);
      expect((await app.get(path, { 'if-none-match': '*' })).status).toBe(304);
      const other = await app.get(path, { 'if-none-match': '"other"' });
      expect(other.status).toBe(200);
      expect(await other.text()).toBe(body);
    }
  });

  it('no ETag for the latest book, or at or after the newest event (the book there may still change)', async () => {
    const last = times[times.length - 1];
    for (const path of [
      `/v1/orderbook?asset_id=${asset}`,
      `/v1/price?asset_id=${asset}`,
      `/v1/orderbook?asset_id=${asset}&timestamp=${last}`,
      `/v1/price?asset_id=${asset}&timestamp=${last + 10_000}`,
      `/v1/execution-price?asset_id=${asset}&side=SELL&amount=1&timestamp=${last}`,
    ]) {
      const res = await app.get(path, { 'if-none-match': '*' });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('etag'), path).toBeNull();
      expect(res.headers.get('cache-control'), path).toBeNull();
    }
  });

  it('late data changes the ETag: the old tag no longer gets a 304', async () => {
    const at = times[Math.floor(times.length / 3)] + 1;
    const path = `/v1/orderbook?asset_id=${asset}&timestamp=${at}&limit=100`;
    const first = await app.get(path);
    const etag = first.headers.get('etag')!;
    expect(etag).toBeTruthy();
    await app.te.engine.command(
      `INSERT INTO ticks (asset_id, t, seq, event, side, best_bid, best_ask, price, size, market, book_side)
       VALUES ({a:String}, fromUnixTimestamp64Milli({t:Int64}, 'UTC'), {seq:UInt64}, 'price_change', 'YES', 0, 1, 0.011, 3, 'm', 'BUY')`,
      { params: { a: asset, t: at, seq: 2 ** 60 } },
    );
    const after = await app.get(path, { 'if-none-match': etag });
    expect(after.status).toBe(200);
    const body = await after.text();
    expect(JSON.parse(body).data.bids).toContainEqual({ price: 0.011, size: 3 });
    expect(after.headers.get('etag')).toBe(digest(body));
    expect(after.headers.get('etag')).not.toBe(etag);
  });

  it('openapi.json documents the 304', async () => {
    const doc = await (await app.app.request('/v1/openapi.json')).json();
    for (const path of ['/v1/orderbook', '/v1/price', '/v1/execution-price']) expect(Object.keys(doc.paths[path].get.responses)).toContain('304');
    expect(doc.paths['/v1/orderbook/export'].get.parameters.map((p: { name: string }) => p.name)).toEqual([
      'asset_id',
      'start',
      'end',
      'depth',
      'interval',
      'format',
    ]);
  });
});
