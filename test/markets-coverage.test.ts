import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayLines } from '../src/ingest/frame-files.js';
import { bookFrame, capture } from './support/coverage-lines.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { json } from './support/ticks-fixture.js';

/**
 * /v1/markets coverage on a page of 300 recorded tokens (more than one lookup's worth of ids): each
 * recorded since 12:00 two days ago and still recording, so its last 7 days are 4 unknown (before the
 * first run), 1 degraded (half a day) and 2 available (yesterday, and today up to now).
 */
const DAY = 86_400_000;
const TODAY = Date.UTC(2026, 6, 10);
const NOW = TODAY + 6 * 3_600_000;
const ASSETS = Array.from({ length: 300 }, (_, i) => `${5_000_000 + i}`);

let t: DataApp;

beforeAll(async () => {
  t = await startDataApp(NOW);
  const start = TODAY - 2 * DAY + 12 * 3_600_000;
  const lines = [
    capture('start', start, 'rec-many', 0),
    capture('subscribe', start, 'rec-many', 1, ASSETS),
    capture('open', start, 'rec-many', 1, ASSETS),
    ...ASSETS.map((a, i) => bookFrame(a, TODAY + i, [['0.4', '1']], [['0.6', '1']])),
  ];
  await replayLines(t.deps.engine, lines, { sourceId: 'markets-coverage' });
});

afterAll(() => t?.close());

describe('GET /v1/markets coverage, many entries', () => {
  it('gives every entry of a 300-entry page its conditions', async () => {
    const body = await json(await t.app.request('/v1/markets?limit=1000'));
    expect(body.data).toHaveLength(300);
    for (const entry of body.data) expect([entry.asset_id, entry.coverage]).toEqual([entry.asset_id, { unknown: 4, degraded: 1, available: 2 }]);
  });
});
