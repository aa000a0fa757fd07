import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contractViolations, type SentRequest, targetClass } from './support/fuzz/contract.js';
import { CATEGORIES, FuzzHarness, type FuzzReport, findingsDigest, summaryLine } from './support/fuzz/harness.js';
import type { RawResponse } from './support/fuzz/raw-http.js';
import { FuzzService } from './support/fuzz/service.js';

/**
 * The fuzz harness of issue 24 (test/support/fuzz/), small and with a fixed seed: the real service as
 * a child process (demo data, an unlimited key and free keys), then
 *   - schema: every operation of the live /v1/openapi.json with valid parameters, every corner of its
 *     numeric parameters, and every parameter at each core bound value (min, max, max+1, NaN, 1e400, -1,
 *     empty, huge, unicode, twice, missing; times at now and at the maximum date);
 *   - framing: raw HTTP/1.x on a socket — every bad request-target, Host, upgrade, header, version,
 *     method and body once, the upgrades on every target and Host, then pipelining and slow partial
 *     requests;
 *   - websocket: each kind of replay abuse once (churn while not reading, floods, huge, binary and
 *     invalid frames, 501 assets, …);
 * and after each case: the process is alive, /healthz answers within 100 ms, the RSS is bounded, no key
 * was printed, every answer had the contract's shape and no 5xx. `npm run fuzz` runs the same harness
 * 20× larger with every bound value and a random seed.
 */
const SEED = 24;

let service: FuzzService;
let harness: FuzzHarness;
const reports: FuzzReport[] = [];

beforeAll(async () => {
  service = await FuzzService.start();
  harness = new FuzzHarness(service);
  await harness.loadDocument();
}, 120_000);

afterAll(async () => {
  if (reports.length) console.log(summaryLine(merged(reports)));
  await service?.stop();
});

describe('fuzz harness against the service process (issue 24)', () => {
  for (const category of CATEGORIES) {
    it(`${category}: no crash, hang, 5xx, unbounded memory, key in a log or answer outside the contract`, { timeout: 600_000 }, async () => {
      const cases = harness.testCases()[category];
      const report = await harness.run({ seed: SEED, cases: { [category]: cases }, size: 'core' });
      reports.push(report);
      console.log(summaryLine(report));
      expect(report.stats[category].cases).toBe(cases);
      // Each finding names its case: `npm run fuzz -- --seed 24 --size core --only <category>:<index>` replays it.
      expect(report.findings.length, `${report.findings.length} finding(s):\n${findingsDigest(report.findings)}`).toBe(0);
    });
  }
});

describe('the harness checks (they must be able to fail)', () => {
  const sent = (target: string, extra: Partial<SentRequest> = {}): SentRequest => ({
    method: 'GET',
    target,
    kind: 'route',
    sentAt: Date.now(),
    secrets: [],
    ...extra,
  });
  const res = (status: number, body: string, headers: [string, string][] = [['content-type', 'application/json']]): RawResponse => ({
    version: 'HTTP/1.1',
    status,
    reason: '',
    headers,
    body: Buffer.from(body),
    truncated: false,
  });

  it('accepts answers in the contract shape', () => {
    expect(contractViolations(sent('/v1/ticks?x'), res(400, '{"detail":{"error":"invalid_parameter","message":"m","param":"x"}}'))).toEqual([]);
    expect(contractViolations(sent('/nope'), res(404, '{"detail":{"message":"Not found"}}'))).toEqual([]);
    expect(contractViolations(sent('/v1/clob/k/at/1/book'), res(404, '{"error":"No orderbook exists for the requested token id"}'))).toEqual([]);
    expect(contractViolations(sent('/v1/ticks/export'), res(200, `timestamp,x\n${Date.now() - 5}\n`, [['content-type', 'text/csv; charset=utf-8']]))).toEqual(
      [],
    );
  });

  it('flags a 5xx, an error without a JSON body, the wrong shape, an echoed key and an export row from the future', () => {
    expect(contractViolations(sent('/v1/ticks'), res(500, '{"detail":{"error":"internal_error","message":"m"}}'))[0]).toMatch(/^5xx/);
    expect(contractViolations(sent('//', { kind: 'raw' }), res(400, '', []))).toEqual(['error without a JSON body: 400 Content-Type "" body ""']);
    expect(contractViolations(sent('/v1/clob//at/1/book'), res(404, '{"detail":{"message":"Not found"}}'))[0]).toMatch(/not Polymarket's/);
    expect(contractViolations(sent('/v1/ticks'), res(400, '{"detail":{"error":"invalid_parameter","message":"m"}}'))).toEqual([
      'invalid_parameter without detail.param',
    ]);
    const key = 'th_live_0123456789abcdefghijklmnopqrstuvwxyz';
    expect(
      contractViolations(
        sent(`//v1/clob/${key}/at/1/book`, { secrets: [key] }),
        res(404, `{"detail":{"message":"Not found: GET //v1/clob/${key}/at/1/book"}}`),
      )[0],
    ).toMatch(/^key echoed/);
    const future = contractViolations(
      sent('/v1/orderbook/export'),
      res(200, `timestamp,best_bid\n${Date.now() + 3_600_000},0.5\n`, [['content-type', 'text/csv; charset=utf-8']]),
    );
    expect(future[0]).toMatch(/^export row in the future/);
  });

  it('tells /v1/clob/… paths from look-alikes', () => {
    expect(targetClass('/v1/clob/./at/1/book')).toBe('clob');
    expect(targetClass('/v1/clob//at/1/book')).toBe('clob');
    expect(targetClass('//v1/clob/k/at/1/book')).toBe('clob-lookalike');
    expect(targetClass('/V1/clob/k/at/1/book')).toBe('clob-lookalike');
    expect(targetClass('/v1/ticks')).toBe('v1');
  });
});

function merged(rs: FuzzReport[]): FuzzReport {
  const out = { ...rs[0], stats: { ...rs[0].stats }, findings: [...rs[0].findings] };
  for (const r of rs.slice(1)) {
    for (const c of CATEGORIES) if (r.stats[c].cases) out.stats[c] = r.stats[c];
    out.findings.push(...r.findings);
    out.crashes += r.crashes;
    out.hangs += r.hangs;
    out.fiveXX += r.fiveXX;
    out.restarts += r.restarts;
    out.retried += r.retried;
    if (r.maxHealthzMs > out.maxHealthzMs) [out.maxHealthzMs, out.slowestCase] = [r.maxHealthzMs, r.slowestCase];
    out.rssMax = Math.max(out.rssMax, r.rssMax);
    out.rssEnd = r.rssEnd;
    out.seconds += r.seconds;
  }
  return out;
}
