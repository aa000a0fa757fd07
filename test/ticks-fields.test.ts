import { createRequire } from 'node:module';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { type DataApp, startDataApp } from './support/data-app.js';

/**
 * `fields=` on /v1/ticks and /v1/ticks/export (docs/API.md §4, docs/INGEST.md §4): book side, taker
 * side, receive time and arrival order appended after the contract's columns, in that order, in every
 * format; without it the output is the contract's, byte for byte. Frames written here, some with a
 * receive time prefix (docs/INGEST.md §3).
 */
const T0 = Date.UTC(2026, 5, 1);
const NOW = T0 + 86_400_000;
const A = '5150';
const stamp = (iso: string) => `${iso} `;
const lines = [
  // Received 1.2345 ms after T0 (the 7th decimal is dropped: µs 1234).
  stamp('2026-06-01T00:00:00.0012345Z') +
    JSON.stringify({
      event_type: 'book',
      asset_id: A,
      market: '0xf',
      timestamp: String(T0),
      bids: [{ price: '0.4', size: '10' }],
      asks: [{ price: '0.6', size: '10' }],
    }),
  stamp('2026-06-01T00:00:00.0120000Z') +
    JSON.stringify({
      event_type: 'price_change',
      market: '0xf',
      timestamp: String(T0 + 10),
      price_changes: [
        { asset_id: A, price: '0.45', size: '5', side: 'BUY', best_bid: '0.45', best_ask: '0.6' },
        { asset_id: A, price: '0.55', size: '7', side: 'SELL', best_bid: '0.45', best_ask: '0.55' },
      ],
    }),
  // No receive time: local_t = t.
  JSON.stringify({
    event_type: 'last_trade_price',
    asset_id: A,
    market: '0xf',
    price: '0.55',
    side: 'BUY',
    size: '2',
    fee_rate_bps: '0',
    timestamp: String(T0 + 20),
  }),
  stamp('2026-06-01T00:00:00.0309999Z') +
    JSON.stringify({ event_type: 'last_trade_price', asset_id: A, market: '0xf', price: '0.45', side: 'SELL', size: '1', timestamp: String(T0 + 30) }),
  // A trade without a side (as rows stored before the side was kept read).
  JSON.stringify({ event_type: 'last_trade_price', asset_id: A, market: '0xf', price: '0.5', size: '3', timestamp: String(T0 + 40) }),
];

let d: DataApp;
let seqs: number[];

beforeAll(async () => {
  d = await startDataApp(NOW);
  const summary = await replayLines(d.te.engine, lines, { sourceId: 'ticks-fields' });
  expect(summary.normalizer.malformed).toBe(0);
  seqs = (await d.te.engine.rows<{ seq: number }>(`SELECT seq FROM ticks ORDER BY t, seq SETTINGS output_format_json_quote_64bit_integers = 0`)).map(
    (r) => r.seq,
  );
  expect(seqs).toHaveLength(6);
}, 60_000);
afterAll(() => d?.close());

/** The contract's columns of each tick, in order. */
const CONTRACT = [
  [T0, 'book', 'UNKNOWN', 0.4, 0.6, 0, 0],
  [T0 + 10, 'price_change', 'UNKNOWN', 0.45, 0.6, 0.45, 5],
  [T0 + 10, 'price_change', 'UNKNOWN', 0.45, 0.55, 0.55, 7],
  [T0 + 20, 'last_trade_price', 'UNKNOWN', 0.45, 0.55, 0.55, 2],
  [T0 + 30, 'last_trade_price', 'UNKNOWN', 0.45, 0.55, 0.45, 1],
  [T0 + 40, 'last_trade_price', 'UNKNOWN', 0.45, 0.55, 0.5, 3],
] as const;
/** book_side, taker_side, local_t of each tick (seq is read from the table). */
const EXTRA = [
  ['', '', T0 + 1.234],
  ['bid', '', T0 + 12],
  ['ask', '', T0 + 12],
  ['', 'buy', T0 + 20],
  ['', 'sell', T0 + 30.999],
  ['', '', T0 + 40],
] as const;
const KEYS = ['t', 'event', 'side', 'best_bid', 'best_ask', 'price', 'size'];
const rowOf = (i: number, fields: string[]) => {
  const all: Record<string, unknown> = { book_side: EXTRA[i][0], taker_side: EXTRA[i][1], local_t: EXTRA[i][2], seq: seqs[i] };
  return { ...Object.fromEntries(KEYS.map((k, j) => [k, CONTRACT[i][j]])), ...Object.fromEntries(fields.map((f) => [f, all[f]])) };
};
const q = (extra: string) => `asset_id=${A}&start=${T0}&end=${NOW}${extra}`;

describe('GET /v1/ticks?fields=', () => {
  it('without fields: the contract’s members only', async () => {
    const body = await (await d.get(`/v1/ticks?${q('')}`)).json();
    expect(body.data).toEqual(CONTRACT.map((_, i) => rowOf(i, [])));
  });

  it('fields=all: book_side, taker_side, local_t (ms, µs as 3 decimals), seq after them, in that order', async () => {
    const res = await d.get(`/v1/ticks?${q('&fields=all')}`);
    const text = await res.text();
    expect(JSON.parse(text).data).toEqual(CONTRACT.map((_, i) => rowOf(i, ['book_side', 'taker_side', 'local_t', 'seq'])));
    // Member order and number text exactly as the engine printed them.
    expect(text).toContain(
      `{"t":${T0},"event":"book","side":"UNKNOWN","best_bid":0.4,"best_ask":0.6,"price":0,"size":0,` +
        `"book_side":"","taker_side":"","local_t":${T0 + 1}.234,"seq":${seqs[0]}}`,
    );
  });

  it('a subset, in any order and repeated, comes out in the fixed order; pages and cursors work as without', async () => {
    const first = await (await d.get(`/v1/ticks?${q('&fields=seq,book_side,seq&limit=4')}`)).json();
    expect(first.data).toEqual([0, 1, 2, 3].map((i) => rowOf(i, ['book_side', 'seq'])));
    expect(Object.keys(first.data[0])).toEqual([...KEYS, 'book_side', 'seq']);
    const next = await (await d.get(`/v1/ticks?${q(`&fields=seq,book_side&limit=4&cursor=${first.meta.next_cursor}`)}`)).json();
    expect(next.data).toEqual([4, 5].map((i) => rowOf(i, ['book_side', 'seq'])));
    expect(next.meta).toEqual({ count: 2, next_cursor: null });
  });

  it('an unknown field is a 400 naming fields', async () => {
    for (const bad of ['side', 'local_t,nope', '', 'ALL']) {
      const res = await d.get(`/v1/ticks?${q(`&fields=${bad}`)}`);
      expect(res.status).toBe(400);
      expect((await res.json()).detail).toEqual({
        error: 'invalid_parameter',
        param: 'fields',
        message: 'fields must be a comma-separated list of book_side, taker_side, local_t, seq, or all',
      });
    }
  });
});

describe('GET /v1/ticks/export?fields=', () => {
  it('CSV: the header and every row with the fields appended', async () => {
    const text = await (await d.get(`/v1/ticks/export?${q('&fields=all')}`)).text();
    const csv = (i: number) => [...CONTRACT[i], ...EXTRA[i], seqs[i]].join(',');
    expect(text).toBe(
      `timestamp,event_type,side,best_bid,best_ask,price,size,book_side,taker_side,local_t,seq\n${CONTRACT.map((_, i) => `${csv(i)}\n`).join('')}`,
    );
    expect(text.split('\n')[1]).toBe(`${T0},book,UNKNOWN,0.4,0.6,0,0,,,${T0 + 1}.234,${seqs[0]}`);
    // Without fields: the contract's CSV, byte for byte.
    expect(await (await d.get(`/v1/ticks/export?${q('')}`)).text()).toBe(
      `timestamp,event_type,side,best_bid,best_ask,price,size\n${CONTRACT.map((r) => `${r.join(',')}\n`).join('')}`,
    );
  });

  it('JSONL: the same objects as /v1/ticks, one per line', async () => {
    const text = await (await d.get(`/v1/ticks/export?${q('&fields=taker_side,local_t&format=jsonl')}`)).text();
    expect(
      text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(CONTRACT.map((_, i) => rowOf(i, ['taker_side', 'local_t'])));
  });

  it('Parquet: the columns appended, read back by an independent reader (hyparquet)', async () => {
    const buf = await (await d.get(`/v1/ticks/export?${q('&fields=all&format=parquet')}`)).arrayBuffer();
    // The engine writes ZSTD pages; zstd itself decodes them (hyparquet ships no ZSTD codec).
    const { Decoder } = createRequire(import.meta.url)('@toondepauw/node-zstd') as { Decoder: new () => { decodeSync(b: Buffer): Buffer } };
    const rows = await parquetReadObjects({ file: buf, compressors: { ZSTD: (input: Uint8Array) => new Decoder().decodeSync(Buffer.from(input)) } });
    expect(Object.keys(rows[0])).toEqual([...KEYS, 'book_side', 'taker_side', 'local_t', 'seq']);
    expect(rows.map((r) => ({ ...r, t: Number(r.t), seq: Number(r.seq) }))).toEqual(
      CONTRACT.map((_, i) => rowOf(i, ['book_side', 'taker_side', 'local_t', 'seq'])),
    );
  });
});
