import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { levelsDiffering, OrderBook } from '../src/book/index.js';
import type { BookCheckRow } from '../src/clickhouse/rows.js';
import { replayLines } from '../src/ingest/frame-files.js';
import { fileSeq, Normalizer } from '../src/ingest/normalizer.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { fixturePath } from './support/fixtures.js';
import { json, prng } from './support/ticks-fixture.js';

/**
 * The drift check at ingest (docs/TIME-MACHINE.md §4): every exchange `book` of an asset that already had
 * a book is compared with the book rebuilt from the events before it.
 */

interface DriftStream {
  lines: string[];
  /** Per re-sent book, in stream order: its asset, time and how many levels were made to differ (0 = none). */
  resent: { asset: string; t: number; differing: number }[];
  books: number;
}

/**
 * Books kept here as price → size maps (the reference, independent of src/book). Every few frames an
 * asset's book is re-sent as the reference book with `k` distinct levels disturbed — a size
 * changed, a level added, or a level left out — so exactly `k` levels differ.
 */
function driftStream(seed: number, frames: number, start: number): DriftStream {
  const rand = prng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const assets = ['71', '72', '73'];
  const ref = new Map(assets.map((a) => [a, { bids: new Map<number, number>(), asks: new Map<number, number>() }]));
  const lines: string[] = [];
  const resent: DriftStream['resent'] = [];
  let books = 0;
  let t = start;
  const wire = (m: Map<number, number>) => [...m].map(([price, size]) => ({ price: String(price), size: String(size) }));
  const send = (a: string) => {
    const b = ref.get(a)!;
    lines.push(JSON.stringify({ event_type: 'book', market: '0xd', asset_id: a, timestamp: String(t), hash: 'h', bids: wire(b.bids), asks: wire(b.asks) }));
    books++;
  };
  for (const a of assets) {
    const b = ref.get(a)!;
    for (let c = 30; c <= 45; c++) b.bids.set(c / 100, int(1, 900));
    for (let c = 55; c <= 70; c++) b.asks.set(c / 100, int(1, 900));
    send(a);
  }
  for (let i = 0; i < frames; i++) {
    if (rand() < 0.5) t += int(1, 500);
    const a = assets[int(0, assets.length - 1)];
    const b = ref.get(a)!;
    if (rand() < 0.12) {
      const k = rand() < 0.3 ? 0 : int(1, 6);
      const touched = new Set<string>();
      for (let n = 0; n < k; ) {
        const bid = rand() < 0.5;
        const side = bid ? b.bids : b.asks;
        const price = (bid ? int(1, 49) : int(51, 99)) / 100;
        if (touched.has(`${bid}${price}`)) continue;
        touched.add(`${bid}${price}`);
        n++;
        const size = side.get(price);
        if (size === undefined) side.set(price, int(1, 900));
        else if (rand() < 0.5) side.delete(price);
        else side.set(price, size + int(1, 50));
      }
      resent.push({ asset: a, t, differing: k });
      send(a);
    } else {
      const bid = rand() < 0.5;
      const side = bid ? b.bids : b.asks;
      const price = (bid ? int(1, 49) : int(51, 99)) / 100;
      const size = rand() < 0.3 ? 0 : int(1, 900);
      if (size === 0) side.delete(price);
      else side.set(price, size);
      lines.push(
        JSON.stringify({
          event_type: 'price_change',
          market: '0xd',
          timestamp: String(t),
          price_changes: [{ asset_id: a, price: String(price), size: String(size), side: bid ? 'BUY' : 'SELL', hash: 'h' }],
        }),
      );
    }
  }
  return { lines, resent, books };
}

function checksOf(lines: readonly string[]): BookCheckRow[] {
  const checks: BookCheckRow[] = [];
  const normalizer = new Normalizer(
    { tick() {}, snapshot() {}, market() {}, capture() {}, marketEvent() {}, bookCheck: (r) => checks.push(r) },
    { seq: fileSeq('drift') },
  );
  for (const line of lines) normalizer.push(line);
  return checks;
}

describe('levelsDiffering', () => {
  const book = (bids: [number, number][], asks: [number, number][]) =>
    OrderBook.of(
      bids.map(([price, size]) => ({ price, size })),
      asks.map(([price, size]) => ({ price, size })),
    );
  it('counts the levels whose size differs, a level absent from one book counting as size 0', () => {
    const a = book(
      [
        [0.4, 10],
        [0.3, 5],
      ],
      [[0.6, 7]],
    );
    expect(levelsDiffering(a, a.clone())).toBe(0);
    expect(
      levelsDiffering(
        a,
        book(
          [
            [0.4, 10],
            [0.3, 6],
          ],
          [[0.6, 7]],
        ),
      ),
    ).toBe(1);
    expect(
      levelsDiffering(
        a,
        book(
          [[0.4, 10]],
          [
            [0.6, 7],
            [0.7, 1],
          ],
        ),
      ),
    ).toBe(2);
    expect(levelsDiffering(a, book([], []))).toBe(3);
    expect(levelsDiffering(book([], []), a)).toBe(3);
    // The same price on the other side is a different level.
    expect(levelsDiffering(book([[0.5, 1]], []), book([], [[0.5, 1]]))).toBe(2);
  });
});

describe('the drift check at ingest', () => {
  const s = driftStream(17, 6000, Date.UTC(2026, 5, 10));

  it('gives exactly the known drift of every re-sent book of a generated stream', () => {
    expect(s.resent.filter((r) => r.differing > 0).length).toBeGreaterThan(100);
    expect(s.resent.filter((r) => r.differing === 0).length).toBeGreaterThan(30);
    const checks = checksOf(s.lines);
    expect(checks).toHaveLength(s.books);
    // The first book of each asset has nothing before it.
    expect(checks.slice(0, 3).map((c) => c.verdict)).toEqual(['unchecked', 'unchecked', 'unchecked']);
    expect(checks.slice(3).map((c) => ({ t: c.t, verdict: c.verdict, levels_differing: c.levels_differing }))).toEqual(
      s.resent.map((r) => ({ t: r.t, verdict: r.differing ? 'drifted' : 'verified', levels_differing: r.differing })),
    );
  });

  it('the real sample: a book re-sent with no event between is verified; line 3 differs from lines 1-2 by 11 levels', () => {
    const lines = readFileSync(fixturePath('polymarket/ws-frames.jsonl'), 'utf8').split('\n');
    // The initial dump of line 1 received twice, as after a reconnect with nothing traded between.
    expect(checksOf([lines[0], lines[0]]).map((c) => c.verdict)).toEqual(['unchecked', 'unchecked', 'verified', 'verified']);
    // Line 3 is asset B's book re-sent ~1 s after line 2 changed it: the capture skipped frames between
    // (the book was re-sent after a trade), and it differs in bids 0.5, 0.49, 0.48, 0.47 and asks 0.5,
    // 0.51, 0.52, 0.54, 0.55, 0.57, 0.58.
    const [third] = checksOf(lines.slice(0, 3)).slice(2);
    expect(third).toMatchObject({ t: 1766481547845, verdict: 'drifted', levels_differing: 11 });
  });

  it('market events between two books change no level: the book re-sent after them is verified (docs/INGEST.md §5)', () => {
    const lines = readFileSync(fixturePath('polymarket/ws-frames.jsonl'), 'utf8').split('\n');
    const [a] = JSON.parse(lines[0]);
    const on = (e: object) => JSON.stringify({ ...e, asset_id: a.asset_id, market: a.market });
    const events = [
      on({ event_type: 'tick_size_change', old_tick_size: '0.01', new_tick_size: '0.001', timestamp: '1766481546500' }),
      on({ event_type: 'best_bid_ask', best_bid: '0.49', best_ask: '0.5', spread: '0.01', timestamp: '1766481546501' }),
    ];
    const again = JSON.stringify({ ...a, timestamp: '1766481546502' });
    expect(checksOf([JSON.stringify(a), ...events, again]).map((c) => c.verdict)).toEqual(['unchecked', 'verified']);
  });

  it('a book started by price_change alone is not checked: it may lack levels no event of the run set', () => {
    const change = JSON.stringify({
      event_type: 'price_change',
      market: '0xd',
      timestamp: '5',
      price_changes: [{ asset_id: '9', price: '0.4', size: '1', side: 'BUY' }],
    });
    const book = JSON.stringify({ event_type: 'book', market: '0xd', asset_id: '9', timestamp: '6', bids: [{ price: '0.3', size: '2' }], asks: [] });
    expect(checksOf([change, book, book]).map((c) => c.verdict)).toEqual(['unchecked', 'verified']);
  });
});

describe('/v1/coverage books and drift after a replay', () => {
  const START = Date.UTC(2026, 5, 10);
  const s = driftStream(17, 12_000, START);
  let t: DataApp;
  beforeAll(async () => {
    t = await startDataApp(Date.UTC(2026, 5, 20));
    await replayLines(t.deps.engine, s.lines, { sourceId: 'drift' });
  });
  afterAll(() => t?.close());

  it('counts and lists the drifted books of one asset (the first 100)', async () => {
    const resent = s.resent.filter((r) => r.asset === '71');
    const drifted = resent.filter((r) => r.differing > 0);
    expect(drifted.length).toBeGreaterThan(100);
    const body = await json(await t.get(`/v1/coverage?asset_id=71&start=${START}&end=${Date.UTC(2026, 5, 19)}`));
    // One more exchange book than re-sent ones: the first.
    expect(body.data.books).toEqual({ exchange: resent.length + 1, verified: resent.length - drifted.length, drifted: drifted.length });
    expect(body.data.drift).toEqual(drifted.slice(0, 100).map((r) => ({ t: r.t, levels_differing: r.differing })));
  });
});
