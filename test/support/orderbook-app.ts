import type { ManualClock } from '../../src/clock.js';
import type { PlanName } from '../../src/plans.js';
import { startDataApp } from './data-app.js';
import type { TestEngine } from './engine.js';

/** The data app (data-app.ts) with a GET that parses the JSON body. */
export interface OrderbookApp {
  te: TestEngine;
  clock: ManualClock;
  /** Bearer key of an active `unlimited` account. */
  key: string;
  keyFor(plan: PlanName): Promise<string>;
  /** GET `path` with `key` (default: the unlimited one); the parsed JSON body and the status. */
  get(path: string, key?: string | null): Promise<{ status: number; body: any; res: Response }>;
  close(): Promise<void>;
}

export async function startOrderbookApp(now: number): Promise<OrderbookApp> {
  const base = await startDataApp(now);
  return {
    te: base.te,
    clock: base.clock,
    key: base.key,
    keyFor: base.keyFor,
    async get(path, withKey = base.key) {
      const res = await base.app.request(path, { headers: withKey === null ? {} : { authorization: `Bearer ${withKey}` } });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null, res };
    },
    close: base.close,
  };
}
