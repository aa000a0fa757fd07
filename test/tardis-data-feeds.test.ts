import { createRequire } from 'node:module';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { replayLines } from '../src/ingest/frame-files.js';
import { receiveTimePrefix } from '../src/ingest/receive-time.js';
import { generateFrames } from './support/book-frames.js';
import { type ReplayService, startReplayService } from './support/replay-service.js';
import { waitFor } from './support/wait.js';

/**
 * GET /v1/tardis/data-feeds/polymarket (docs/TARDIS.md §2): minute slices whose lines are the replay
 * WebSocket's messages for the same window, in its order, each after its receive time in Tardis's
 * 28-character form; empty lines where the recorder lost its connection; the slice headers the
 * Tardis clients need. The real clients run against it in the Python suite (test_tardis.py).
 */
let svc: ReplayService;
const START = Date.UTC(2025, 11, 18, 12, 0);
const frames = generateFrames(20261127, 1500, START);
const lines = frames.lines.filter((l) => l.startsWith('{') || l.startsWith('['));
/** Receive time (µs) of each frame, by `event_type|asset or market|timestamp` of its first event. */
const localOf = new Map<string, number[]>();
const ALL = ['1001', '1002', '2001', '3001', '9009'];
/** A recorder disconnect stored in the third minute. */
const CLOSE_AT = START + 2 * 60_000 + 30_000;

function keyOf(e: Record<string, unknown>): string {
  return `${e.event_type}|${e.event_type === 'price_change' ? e.market : e.asset_id}|${e.timestamp}`;
}

beforeAll(async () => {
  const stamped = lines.map((line, i) => {
    const frame = JSON.parse(line);
    const first = Array.isArray(frame) ? frame[0] : frame;
    const local = Number(first.timestamp) * 1000 + 1 + ((i * 53) % 900);
    for (const e of Array.isArray(frame) ? frame : [frame]) {
      const k = keyOf(e);
      localOf.set(k, [...(localOf.get(k) ?? []), local]);
    }
    return receiveTimePrefix(local) + line;
  });
  svc = await startReplayService(START + 86_400_000);
  const summary = await replayLines(svc.te.engine, stamped, { sourceId: 'tardis-feeds' });
  expect(summary.normalizer.malformed).toBe(0);
  await svc.te.engine.command(
    'INSERT INTO capture_events (asset_id, t, seq, run, socket, kind) ' +
      `VALUES ('1001', fromUnixTimestamp64Milli(toInt64(${CLOSE_AT}), 'UTC'), 1, 'r', 1, 'close')`,
  );
}, 120_000);

afterAll(() => svc?.close());

const decoder = new (createRequire(import.meta.url)('@toondepauw/node-zstd').Decoder)() as { decodeSync(b: Buffer): Buffer };

async function slice(query: Record<string, string>, accept = 'gzip') {
  const res = await svc.get(`/v1/tardis/data-feeds/polymarket?${new URLSearchParams(query)}`, { 'accept-encoding': accept });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) return { res, text: body.toString() };
  const coding = res.headers.get('content-encoding');
  return { res, text: (coding === 'zstd' ? decoder.decodeSync(body) : gunzipSync(body)).toString() };
}

/** The replay WebSocket's messages (initial book array left out) for events with lo ≤ t < hi. */
async function wsMessages(assets: string[], lo: number, hi: number): Promise<string[]> {
  const ws: WebSocket = await svc.connect({ from: lo - 1, to: hi - 1, speed: 'max', key: svc.key });
  const got: string[] = [];
  let closed = false;
  ws.on('message', (m) => got.push(String(m)));
  ws.on('close', () => {
    closed = true;
  });
  ws.send(JSON.stringify({ assets_ids: assets, type: 'market', custom_feature_enabled: true }));
  await waitFor(() => closed, 'the replay to complete');
  return got.filter((m, i) => !(i === 0 && m.startsWith('[')));
}

const filtersAll = JSON.stringify(
  ['book', 'price_change', 'last_trade_price', 'tick_size_change', 'best_bid_ask'].map((channel) => ({ channel, symbols: ALL })),
);

describe('slices', () => {
  it('hold the replay WebSocket’s messages in order, each after its receive time; an empty line at a disconnect', async () => {
    const from = new Date(START).toISOString();
    const minutes = Math.ceil((frames.end - START) / 60_000) + 1;
    const got: string[] = [];
    for (let offset = 0; offset < minutes; offset++) {
      const { res, text } = await slice({ from, offset: String(offset), filters: filtersAll });
      expect([res.status, res.headers.get('content-encoding'), res.headers.get('x-slice-size')]).toEqual([200, 'gzip', '1']);
      expect(res.headers.get('x-suggested-slice-size')).toBe('240');
      if (text) got.push(...text.slice(0, -1).split('\n'));
    }
    const want = await wsMessages(ALL, START, START + minutes * 60_000);
    expect(want.length).toBeGreaterThan(500);
    // The disconnect: one empty line, before the first message after it.
    const gap = got.indexOf('');
    expect(gap).toBeGreaterThan(0);
    expect(got.filter((l) => l === '').length).toBe(1);
    expect(Date.parse(got[gap + 1].slice(0, 23))).toBeGreaterThanOrEqual(CLOSE_AT);
    expect(Date.parse(got[gap - 1].slice(0, 23))).toBeLessThanOrEqual(CLOSE_AT + 1);
    const messages = got.filter((l) => l !== '');
    expect(messages.map((l) => l.slice(29))).toEqual(want);
    for (const line of messages) {
      expect(line.slice(26, 29)).toBe('0Z ');
      const e = JSON.parse(line.slice(29));
      const first = e.event_type === 'price_change' ? { ...e, market: e.market } : e;
      const local = Date.parse(`${line.slice(0, 23)}Z`) * 1000 + Number(line.slice(23, 26));
      expect(localOf.get(keyOf(first)) ?? [], line.slice(0, 120)).toContain(local);
    }
  });

  it('filters by channel and asset; sliceSize minutes in one; zstd when accepted', async () => {
    const from = new Date(START).toISOString();
    const filters = JSON.stringify([{ channel: 'last_trade_price', symbols: ['1002'] }]);
    const { res, text } = await slice({ from, offset: '0', sliceSize: '60', filters, compression: 'zstd-multiframe' }, 'zstd, gzip');
    expect([res.status, res.headers.get('content-encoding'), res.headers.get('x-slice-size')]).toEqual([200, 'zstd', '60']);
    const want = (await wsMessages(['1002'], START, START + 3_600_000)).filter((m) => m.includes('"last_trade_price"'));
    expect(want.length).toBeGreaterThan(5);
    expect(text.split('\n').map((l) => l.slice(29))).toEqual([...want, '']);
  });

  it('a slice with nothing in it is an empty gzip body with the headers', async () => {
    const { res, text } = await slice({ from: '2025-12-10', offset: '3', filters: filtersAll });
    expect([res.status, res.headers.get('x-slice-size'), text]).toEqual([200, '1', '']);
  });
});

describe('errors', () => {
  it('400 for missing or bad filters and an unfinished slice; 401 without a key; never 404', async () => {
    const from = new Date(START).toISOString();
    const param = async (q: Record<string, string>) => {
      const { res, text } = await slice(q);
      return [res.status, JSON.parse(text).detail.param];
    };
    expect(await param({ from, offset: '0' })).toEqual([400, 'filters']);
    expect(await param({ from, filters: '[{"channel":"book"}]' })).toEqual([400, 'filters']);
    expect(await param({ from, filters: '[{"channel":"trades","symbols":["1001"]}]' })).toEqual([400, 'filters']);
    expect(await param({ from: 'yesterday', filters: filtersAll })).toEqual([400, 'from']);
    expect(await param({ from: new Date(START + 86_400_000).toISOString(), filters: filtersAll })).toEqual([400, 'offset']);
    const none = await svc.app.request(`/v1/tardis/data-feeds/polymarket?from=${from}&filters=${encodeURIComponent(filtersAll)}`, {
      headers: { authorization: '' },
    });
    expect(none.status).toBe(401);
  });
});
