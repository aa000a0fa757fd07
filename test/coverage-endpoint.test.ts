import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { bookFrame, capture, changeFrame, type Pair } from './support/coverage-lines.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { json } from './support/ticks-fixture.js';

/**
 * GET /v1/coverage (docs/TIME-MACHINE.md §4) on a hand-written archive whose answer is worked out below
 * from the spec: one recorder run over five UTC days, a 5 s disconnect, an asset added later, a
 * drifted book, and an asset whose data came from another file.
 */
const H = 3_600_000;
const DAY = 24 * H;
const D1 = Date.UTC(2026, 5, 1);
const [D2, D3, D4, D5] = [1, 2, 3, 4].map((n) => D1 + n * DAY);
const NOW = D5 + 12 * H;
const A = '1001';
const B = '1002';
const C = '3003';
const D = '4004';
const RUN = 'rec-test';

const ASKS: Pair[] = [
  ['0.55', '80'],
  ['0.6', '40'],
];
const LINES = [
  // An earlier run that recorded D and crashed: it never recorded its stop.
  capture('start', D1 + 1 * H, 'rec-crashed', 0),
  capture('subscribe', D1 + 1 * H + 5, 'rec-crashed', 1, [D]),
  capture('open', D1 + 1 * H + 10, 'rec-crashed', 1, [D]),
  capture('start', D1 + 6 * H, RUN, 0),
  capture('subscribe', D1 + 6 * H + 10, RUN, 1, [A]),
  capture('open', D1 + 6 * H + 20, RUN, 1, [A]),
  // The first book of the run: nothing to check it against.
  bookFrame(
    A,
    D1 + 6 * H + 30,
    [
      ['0.4', '100'],
      ['0.45', '50'],
    ],
    ASKS,
  ),
  capture('resync', D1 + 6 * H + 30, RUN, 1, [A]),
  changeFrame(A, D2 + 1 * H, 'BUY', '0.45', '70'),
  JSON.stringify({ event_type: 'last_trade_price', market: '0xm', asset_id: A, price: '0.55', size: '3', side: 'BUY', timestamp: String(D2 + 1 * H + 1) }),
  // Exactly the book the change made: verified.
  bookFrame(
    A,
    D2 + 2 * H,
    [
      ['0.4', '100'],
      ['0.45', '70'],
    ],
    ASKS,
  ),
  changeFrame(A, D3 + 1 * H, 'SELL', '0.55', '0'),
  // 0.46 is absent from the rebuilt book and 0.55 (removed there) is back: 2 levels differ.
  bookFrame(
    A,
    D3 + 2 * H,
    [
      ['0.4', '100'],
      ['0.45', '70'],
      ['0.46', '5'],
    ],
    ASKS,
  ),
  capture('close', D4 + 10 * H, RUN, 1, [A]),
  capture('open', D4 + 10 * H + 5000, RUN, 1, [A]),
  bookFrame(
    A,
    D4 + 10 * H + 5010,
    [
      ['0.4', '100'],
      ['0.45', '70'],
      ['0.46', '5'],
    ],
    ASKS,
  ),
  capture('resync', D4 + 10 * H + 5010, RUN, 1, [A]),
  // B is added by discovery at noon on a new socket.
  capture('subscribe', D4 + 12 * H, RUN, 2, [B]),
  capture('open', D4 + 12 * H + 10, RUN, 2, [B]),
  bookFrame(B, D4 + 12 * H + 20, [['0.3', '1']], [['0.7', '1']]),
  capture('resync', D4 + 12 * H + 20, RUN, 2, [B]),
  capture('stop', D4 + 18 * H, RUN, 0),
];
// Another file, without capture records.
const OTHER = [bookFrame(C, D2 + 5 * H, [['0.2', '3']], [['0.8', '3']]), changeFrame(C, D2 + 6 * H, 'BUY', '0.21', '4')];

let t: DataApp;

beforeAll(async () => {
  t = await startDataApp(NOW);
  await replayLines(t.deps.engine, LINES, { sourceId: 'coverage-archive' });
  await replayLines(t.deps.engine, OTHER, { sourceId: 'coverage-other' });
});

afterAll(() => t?.close());

const url = (params: Record<string, string | number>) => `/v1/coverage?${new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]))}`;

describe('GET /v1/coverage', () => {
  it('an asset recorded with a disconnect, a drifted book and a stop: every member exact', async () => {
    const res = await t.get(url({ asset_id: A, start: D1, end: NOW }));
    expect(await json(res)).toEqual({
      success: true,
      data: {
        asset_id: A,
        start: D1,
        end: NOW,
        captured: [
          { from: D1 + 6 * H + 20, to: D4 + 10 * H },
          { from: D4 + 10 * H + 5000, to: D4 + 18 * H },
        ],
        gaps: [
          { from: D1, to: D1 + 1 * H, reason: 'unknown' },
          // The crashed run, then this one, recorded without A.
          { from: D1 + 1 * H, to: D1 + 6 * H + 10, reason: 'not_subscribed' },
          { from: D1 + 6 * H + 10, to: D1 + 6 * H + 20, reason: 'disconnected' },
          { from: D4 + 10 * H, to: D4 + 10 * H + 5000, reason: 'disconnected' },
          { from: D4 + 18 * H, to: NOW, reason: 'not_recording' },
        ],
        reconnects: [{ t: D4 + 10 * H + 5000, resynced: true }],
        books: { exchange: 4, verified: 2, drifted: 1 },
        drift: [{ t: D3 + 2 * H, levels_differing: 2 }],
        days: [
          { date: '2026-06-01', condition: 'degraded', ticks: 1, gap_ms: 6 * H + 20 },
          { date: '2026-06-02', condition: 'available', ticks: 3, gap_ms: 0 },
          { date: '2026-06-03', condition: 'degraded', ticks: 2, gap_ms: 0 },
          { date: '2026-06-04', condition: 'degraded', ticks: 1, gap_ms: 5000 + 6 * H },
          { date: '2026-06-05', condition: 'missing', ticks: 0, gap_ms: 12 * H },
        ],
        // Recorded, not imported: no import stored anything of it.
        imports: [],
      },
    });
    expect(res.headers.get('content-type')).toBe('application/json');
  });

  it('an asset added later is not_subscribed before it, and its days are missing until then', async () => {
    const body = await json(await t.get(url({ asset_id: B, start: D1, end: NOW })));
    expect(body.data).toEqual({
      asset_id: B,
      start: D1,
      end: NOW,
      captured: [{ from: D4 + 12 * H + 10, to: D4 + 18 * H }],
      gaps: [
        { from: D1, to: D1 + 1 * H, reason: 'unknown' },
        { from: D1 + 1 * H, to: D4 + 12 * H, reason: 'not_subscribed' },
        { from: D4 + 12 * H, to: D4 + 12 * H + 10, reason: 'disconnected' },
        { from: D4 + 18 * H, to: NOW, reason: 'not_recording' },
      ],
      reconnects: [],
      books: { exchange: 1, verified: 0, drifted: 0 },
      drift: [],
      days: [
        { date: '2026-06-01', condition: 'missing', ticks: 0, gap_ms: DAY },
        { date: '2026-06-02', condition: 'missing', ticks: 0, gap_ms: DAY },
        { date: '2026-06-03', condition: 'missing', ticks: 0, gap_ms: DAY },
        { date: '2026-06-04', condition: 'degraded', ticks: 1, gap_ms: DAY - (6 * H - 10) },
        { date: '2026-06-05', condition: 'missing', ticks: 0, gap_ms: 12 * H },
      ],
      imports: [],
    });
  });

  it('a run that never recorded its stop ended where the next run started', async () => {
    const body = await json(await t.get(url({ asset_id: D, start: D1, end: D2 })));
    expect(body.data).toMatchObject({
      captured: [{ from: D1 + 1 * H + 10, to: D1 + 6 * H }],
      gaps: [
        { from: D1, to: D1 + 1 * H, reason: 'unknown' },
        { from: D1 + 1 * H, to: D1 + 1 * H + 5, reason: 'not_subscribed' },
        { from: D1 + 1 * H + 5, to: D1 + 1 * H + 10, reason: 'disconnected' },
        { from: D1 + 6 * H, to: D2, reason: 'not_subscribed' },
      ],
      books: { exchange: 0, verified: 0, drifted: 0 },
      days: [
        { date: '2026-06-01', condition: 'degraded', ticks: 0, gap_ms: DAY - (5 * H - 10) },
        { date: '2026-06-02', condition: 'missing', ticks: 0, gap_ms: DAY },
      ],
    });
  });

  it('data from another file has no capture record: unknown throughout', async () => {
    const body = await json(await t.get(url({ asset_id: C, start: D2, end: D3 + 1 })));
    expect(body.data).toEqual({
      asset_id: C,
      start: D2,
      end: D3 + 1,
      captured: [],
      gaps: [{ from: D2, to: D3 + 1, reason: 'unknown' }],
      reconnects: [],
      books: { exchange: 1, verified: 0, drifted: 0 },
      drift: [],
      days: [
        { date: '2026-06-02', condition: 'unknown', ticks: 2, gap_ms: DAY },
        { date: '2026-06-03', condition: 'unknown', ticks: 0, gap_ms: DAY },
      ],
      imports: [],
    });
  });

  it('clips intervals to the range (inclusive start, end) and judges its days whole; nothing after now', async () => {
    const inGap = await json(await t.get(url({ asset_id: A, start: D4 + 10 * H + 1000, end: D4 + 10 * H + 4000 })));
    expect(inGap.data).toMatchObject({
      captured: [],
      gaps: [{ from: D4 + 10 * H + 1000, to: D4 + 10 * H + 4000, reason: 'disconnected' }],
      reconnects: [],
      books: { exchange: 0, verified: 0, drifted: 0 },
      days: [{ date: '2026-06-04', condition: 'degraded', ticks: 1, gap_ms: 5000 + 6 * H }],
    });
    // The reconnect instant and the drifted book's instant are inside ranges that end on them.
    const edges = await json(await t.get(url({ asset_id: A, start: D3 + 2 * H, end: D4 + 10 * H + 5000 })));
    expect(edges.data.reconnects).toEqual([{ t: D4 + 10 * H + 5000, resynced: true }]);
    expect(edges.data.drift).toEqual([{ t: D3 + 2 * H, levels_differing: 2 }]);
    expect(edges.data.books).toEqual({ exchange: 1, verified: 0, drifted: 1 });
    const future = await json(await t.get(url({ asset_id: A, start: NOW + 1, end: NOW + DAY })));
    expect(future.data).toMatchObject({ captured: [], gaps: [], reconnects: [] });
    expect(future.data.days).toEqual([{ date: '2026-06-05', condition: 'missing', ticks: 0, gap_ms: 12 * H }]);
  });

  it('counts as one data request', async () => {
    const key = await t.keyFor('daily');
    const res = await t.app.request(url({ asset_id: A, start: D1, end: NOW }), { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBe('1000');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('999');
    const bad = await t.app.request(url({ asset_id: A, start: 'x', end: NOW }), { headers: { authorization: `Bearer ${key}` } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('x-ratelimit-remaining')).toBe('998');
  });
});

describe('GET /v1/coverage errors', () => {
  const cases: [string, Record<string, string | number>, string, string][] = [
    ['asset_id missing', { start: D1, end: NOW }, 'asset_id', 'asset_id is required; it must be 1-100 decimal digits'],
    ['asset_id not digits', { asset_id: '12a', start: D1, end: NOW }, 'asset_id', 'asset_id must be 1-100 decimal digits'],
    ['start missing', { asset_id: A, end: NOW }, 'start', 'start is required; it must be an integer of Unix milliseconds (UTC), 0 or more'],
    ['start negative', { asset_id: A, start: -1, end: NOW }, 'start', 'start must be an integer of Unix milliseconds (UTC), 0 or more'],
    ['end missing', { asset_id: A, start: D1 }, 'end', 'end is required; it must be an integer of Unix milliseconds (UTC), 0 or more'],
    ['end fractional', { asset_id: A, start: D1, end: '1.5' }, 'end', 'end must be an integer of Unix milliseconds (UTC), 0 or more'],
    ['start after end', { asset_id: A, start: NOW, end: D1 }, 'start', 'start must be less than or equal to end'],
  ];
  it.each(cases)('%s → 400 invalid_parameter', async (_name, params, param, message) => {
    expect(await json(await t.get(url(params)), 400)).toEqual({ detail: { error: 'invalid_parameter', message, param } });
  });

  it('a start before the plan’s window → 403 data_access_denied; the window’s first instant is allowed', async () => {
    const key = await t.keyFor('free');
    const get = (start: number) => t.app.request(url({ asset_id: A, start, end: NOW }), { headers: { authorization: `Bearer ${key}` } });
    expect(await json(await get(D5 - 1), 403)).toEqual({
      detail: {
        error: 'data_access_denied',
        message: 'Your plan (free) only allows access to the last 0 day(s) of data.',
        plan: 'free',
        earliest_allowed: '2026-06-05T00:00:00+00:00',
      },
    });
    expect((await get(D5)).status).toBe(200);
  });

  it('no key → 401', async () => {
    expect((await t.app.request(url({ asset_id: A, start: D1, end: NOW }))).status).toBe(401);
  });
});

describe('GET /v1/markets coverage', () => {
  it('counts the conditions of each entry’s last 7 UTC days (up to its last_seen day)', async () => {
    const body = await json(await t.app.request('/v1/markets'));
    const coverage = Object.fromEntries(body.data.map((e: { asset_id: string; coverage: unknown }) => [e.asset_id, e.coverage]));
    expect(coverage).toEqual({
      // May 29-31 precede the first run; June 1 (6 h unknown), 3 (drift), 4 (gap) degraded; June 2 available.
      [A]: { unknown: 3, degraded: 3, available: 1 },
      // Not subscribed before June 4.
      [B]: { unknown: 3, missing: 3, degraded: 1 },
      [C]: { unknown: 7 },
    });
    // The entry's members (docs/API.md §4): coverage, then the instrument as of now (docs/TIME-MACHINE.md §5).
    expect(Object.keys(body.data[0])).toEqual([
      ...['market', 'asset_id', 'side', 'first_seen', 'last_seen', 'total_ticks', 'coverage'],
      ...['outcome', 'tick_size', 'min_order_size', 'neg_risk', 'fees', 'status', 'winner', 'resolved_at', 'source', 'protocol_version'],
    ]);
  });
});
