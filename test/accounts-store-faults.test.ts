import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { startAccountApp, type AccountApp } from './support/account-app.js';
import { createTestEngine, type TestEngine } from './support/engine.js';
import { breakAccountWrites } from './support/write-faults.js';

/** The embedded account store when its disk is full or read-only (real ENOSPC / EACCES). */
const NOW = Date.UTC(2026, 5, 24, 15, 30, 0);
let engine: TestEngine;
let t: AccountApp;
beforeAll(async () => {
  engine = await createTestEngine();
  t = await startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW) });
});
afterAll(async () => {
  await t?.close();
  await engine?.close();
});

describe.each(['ENOSPC', 'EACCES'] as const)('writes fail with %s', (errno) => {
  it('/readyz says the account store is not ready, and ready again once writes work', async () => {
    const repair = breakAccountWrites(t.config.dataDir, errno);
    try {
      const res = await t.app.request('/readyz');
      expect(res.status).toBe(503);
      expect(res.headers.get('Retry-After')).toBe('5');
      expect(await res.json()).toEqual({ status: 'unavailable', clickhouse: true, account_store: false });
    } finally {
      repair();
    }
    const res = await t.app.request('/readyz');
    expect([res.status, await res.json()]).toEqual([200, { status: 'ready', clickhouse: true, account_store: true }]);
  });
});
