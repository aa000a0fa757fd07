import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORY_RUN, withCaptureStory } from '../src/demo/capture-story.js';
import { demoTokens, generateDemo } from '../src/demo/frames.js';
import { seedDemo } from '../src/demo/seed.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { json } from './support/ticks-fixture.js';

/**
 * The first-start demo carries a recorder's capture records (src/demo/capture-story.ts), so a newcomer
 * sees every coverage condition: each asset's /v1/coverage has an unknown, a missing, a degraded and an
 * available day, a reconnect that re-synced, and the demo as a whole drifted books. Expectations come
 * from the story as the module's comment tells it and from docs/TIME-MACHINE.md §4.
 */
const H = 3_600_000;
const DAY = 24 * H;
const D0 = Date.UTC(2026, 5, 7);
const END = D0 + 3 * DAY + 15 * H + 1234; // "now": the fourth UTC day, 15:00
const START = END - 3 * DAY;
const TICKS = 40_000;
const SEED = 3;

let t: DataApp;
const demo = generateDemo({ seed: SEED, ticks: TICKS, endMs: END });
const markets = demo.gammaMarkets.map((m) => ({ conditionId: m.conditionId, tokens: demoTokens(m) }));

beforeAll(async () => {
  t = await startDataApp(END + 60_000);
  await seedDemo(t.te.engine, { seed: SEED, ticks: TICKS, endMs: END, captureStory: true });
}, 120_000);
afterAll(() => t?.close());

describe('the demo capture story', () => {
  it('leaves out exactly each market’s frames between its drop and its next book 20 minutes on, and adds only records', () => {
    const plain = [...demo.frames()];
    const told = [...withCaptureStory(demo.frames(), markets, START, END)];
    const records = told.filter((l) => l.includes('"event_type":"tickhouse_capture"')).map((l) => JSON.parse(l));
    const kept = told.filter((l) => !l.includes('"event_type":"tickhouse_capture"'));
    const dropped = plain.filter((l) => !kept.includes(l));
    // The kept frames are the plain ones in order, minus the dropped ones.
    expect(plain.filter((l) => !dropped.includes(l))).toEqual(kept);
    const D2 = D0 + 2 * DAY;
    markets.forEach((m, i) => {
      const mine = records.filter((r) => r.socket === i + 1);
      expect(mine.map((r) => r.kind)).toEqual(['subscribe', 'open', 'close', 'open', 'resync']);
      for (const r of mine) expect([r.run, r.assets]).toEqual([STORY_RUN, m.tokens]);
      const [subscribe, open, close, reopen] = mine.map((r) => r.t);
      expect([subscribe, open, close]).toEqual([D0 + DAY, D2, D2 + 10 * H + i * 7 * 60_000]);
      // Reopened with the first book of the market at least 20 minutes after the drop.
      const firstBook = plain.find(
        (l) => l.includes(`"market":"${m.conditionId}"`) && l.includes('"event_type":"book"') && frameTime(l) >= close + 20 * 60_000,
      );
      expect(reopen).toBe(frameTime(firstBook!));
      const lost = dropped.filter((l) => l.includes(`"market":"${m.conditionId}"`));
      expect(lost.every((l) => frameTime(l) >= close && frameTime(l) <= reopen)).toBe(true);
      expect(plain.filter((l) => l.includes(`"market":"${m.conditionId}"`) && frameTime(l) >= close && frameTime(l) < reopen)).toEqual(
        lost.filter((l) => frameTime(l) < reopen),
      );
    });
    expect(records.filter((r) => r.socket === 0).map((r) => [r.kind, r.t])).toEqual([['start', D0 + DAY]]);
    expect(dropped.length).toBeGreaterThan(20);
  });

  it('shows every condition on every asset, a re-synced reconnect, and drifted books', async () => {
    let drifted = 0;
    for (const m of markets) {
      for (const asset of m.tokens) {
        const res = await t.get(`/v1/coverage?asset_id=${asset}&start=${START}&end=${END}`);
        expect(res.status).toBe(200);
        const c = (await json(res)).data;
        expect(c.days.map((d: { date: string; condition: string }) => [d.date, d.condition])).toEqual([
          ['2026-06-07', 'unknown'],
          ['2026-06-08', 'missing'],
          ['2026-06-09', 'degraded'],
          ['2026-06-10', 'available'],
        ]);
        expect(c.reconnects).toHaveLength(1);
        expect(c.reconnects[0].resynced).toBe(true);
        expect(c.gaps.map((g: { reason: string }) => g.reason)).toEqual(['unknown', 'disconnected', 'disconnected']);
        drifted += c.books.drifted;
      }
    }
    expect(drifted).toBeGreaterThan(markets.length);
  });

  it('is in /v1/markets entries too', async () => {
    const res = await t.get('/v1/markets?limit=1');
    const [entry] = (await json(res)).data;
    // The 7 days ending with last_seen's: the three before the demo have no capture record either.
    expect(entry.coverage).toEqual({ available: 1, degraded: 1, missing: 1, unknown: 4 });
  });
});

function frameTime(line: string): number {
  return Number(/"timestamp":"(\d+)"/.exec(line)![1]);
}
