import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type GammaProblem, logGammaProblems, parseGammaMarkets } from '../src/ingest/gamma.js';
import { captureLog } from './support/recorder-harness.js';

/**
 * Gamma markets by protocol version (docs/INGEST.md §1; Polymarket's "Migrate to Polymarket V2" guide:
 * choose the id field by `version` even when both are present, reject missing or unsupported versions,
 * unmatched outcomes and missing or non-decimal ids), moneyline markets' side labels, and the log lines
 * for the markets that are not taken as they are.
 */
const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/polymarket/${name}`, import.meta.url), 'utf8')) as Record<string, unknown>[];
const [v1, v2, moneyline, v3] = fixture('gamma-v2-markets.json');
const [legacy] = fixture('gamma-markets.json');

const ids = (m: Record<string, unknown>, field: 'positionIds' | 'clobTokenIds') =>
  (typeof m[field] === 'string' ? JSON.parse(m[field] as string) : m[field]) as string[];

describe('parseGammaMarkets', () => {
  it('takes v2 outcome ids from positionIds and v1 ones from clobTokenIds, even when both are present', () => {
    const { rows, protocols, invalid, problems } = parseGammaMarkets([v1, v2]);
    expect(invalid).toBe(0);
    expect(problems).toEqual([]);
    expect(rows.map((r) => [r.asset_id, r.market, r.outcome])).toEqual([
      [ids(v1, 'clobTokenIds')[0], v1.conditionId, 'Yes'],
      [ids(v1, 'clobTokenIds')[1], v1.conditionId, 'No'],
      [ids(v2, 'positionIds')[0], v2.conditionId, 'Yes'],
      [ids(v2, 'positionIds')[1], v2.conditionId, 'No'],
    ]);
    expect(protocols.map((p) => [p.asset_id, p.protocol_version, p.updated_at])).toEqual([
      [ids(v1, 'clobTokenIds')[0], 'v1', Date.parse('2026-06-30T09:00:00.000Z')],
      [ids(v1, 'clobTokenIds')[1], 'v1', Date.parse('2026-06-30T09:00:00.000Z')],
      [ids(v2, 'positionIds')[0], 'v2', Date.parse('2026-07-01T10:00:00.000Z')],
      [ids(v2, 'positionIds')[1], 'v2', Date.parse('2026-07-01T10:00:00.000Z')],
    ]);
    // The v2 market's clobTokenIds are not taken.
    expect(rows.some((r) => ids(v2, 'clobTokenIds').includes(r.asset_id))).toBe(false);
  });

  it("labels a moneyline market's two outcomes with its sides' names, the long side first", () => {
    const { rows, protocols, problems } = parseGammaMarkets([moneyline]);
    expect(problems).toEqual([]);
    expect(rows.map((r) => [r.asset_id, r.outcome])).toEqual([
      [ids(moneyline, 'positionIds')[0], 'Argentina'],
      [ids(moneyline, 'positionIds')[1], 'Netherlands'],
    ]);
    expect(protocols.map((p) => p.protocol_version)).toEqual(['v2', 'v2']);
    // Without `long`, sides pair with the ids as listed; a side without description is named by its team.
    const listed = { ...moneyline, marketSides: [{ team: { name: 'Brazil' } }, { description: 'France' }] };
    expect(parseGammaMarkets([listed]).rows.map((r) => r.outcome)).toEqual(['Brazil', 'France']);
  });

  it("keeps Gamma's labels for a moneyline market whose sides are not two named ones, and says so", () => {
    const unnamed = { ...moneyline, marketSides: [{ long: true }, { long: false, description: 'Netherlands' }] };
    const { rows, problems } = parseGammaMarkets([unnamed]);
    expect(rows.map((r) => r.outcome)).toEqual(['Yes', 'No']);
    expect(problems).toEqual([{ market: moneyline.conditionId, slug: moneyline.slug, kind: 'sides-unnamed' }]);
  });

  it('reads a market without a version (Gamma before 2026) as v1 and reports it; skips an unsupported version', () => {
    const { rows, protocols, invalid, problems } = parseGammaMarkets([legacy, v3]);
    expect(rows.map((r) => [r.asset_id, r.outcome])).toEqual(ids(legacy, 'clobTokenIds').map((id, i) => [id, ['Yes', 'No'][i]]));
    expect(protocols.map((p) => p.protocol_version)).toEqual(['v1', 'v1']);
    expect(invalid).toBe(1);
    expect(problems).toEqual<GammaProblem[]>([
      { market: legacy.conditionId as string, slug: legacy.slug as string, kind: 'version-missing' },
      { market: v3.conditionId as string, slug: v3.slug as string, kind: 'version-unsupported', version: 'v3' },
    ]);
  });

  it('skips missing or non-decimal ids and outcomes that do not pair with the ids', () => {
    const noPositions = { ...v2, positionIds: undefined };
    const hexIds = { ...v2, positionIds: ['0xabc', '0xdef'] };
    const threeOutcomes = { ...v1, outcomes: '["A", "B", "C"]' };
    const { rows, invalid, problems } = parseGammaMarkets([noPositions, hexIds, threeOutcomes, 'not a market']);
    expect(rows).toEqual([]);
    expect(invalid).toBe(4);
    expect(problems.map((p) => p.kind)).toEqual(['ids-invalid', 'ids-invalid', 'outcomes-unmatched', 'not-an-object']);
  });
});

describe('logGammaProblems', () => {
  it('logs one line per problem up to twenty, then one line counting the rest by kind', () => {
    const problems: GammaProblem[] = Array.from({ length: 25 }, (_, i) => ({
      market: `0x${i}`,
      slug: `m-${i}`,
      kind: i < 22 ? 'version-missing' : 'version-unsupported',
      ...(i < 22 ? {} : { version: 'v9' }),
    }));
    const logs = captureLog();
    try {
      logGammaProblems(problems, 'test');
    } finally {
      logs.stop();
    }
    expect(logs.lines).toHaveLength(21);
    expect(logs.lines[0]).toMatchObject({
      level: 'warn',
      msg: 'Gamma market without a version: read as a v1 (CTF) market, its outcome ids from clobTokenIds',
      source: 'test',
      market: '0x0',
      slug: 'm-0',
    });
    expect(logs.lines[20]).toMatchObject({
      msg: 'more Gamma markets with problems (counted, not logged one by one)',
      'version-missing': 2,
      'version-unsupported': 3,
    });
  });
});
