import type { EffectivePlan } from '../accounts/effective-plan.js';
import type { Account } from '../accounts/types.js';

/** What middleware puts on the Hono context for the handlers after it. */
export interface AppVariables {
  requestId: string;
  /** Set by the auth middleware on protected routes. */
  account: Account;
  /** Set by the auth middleware: the SHA-256 of the key the request came with. */
  keyHash: string;
  /** The limits in force now: the paid plan's while active, free's after expiry. */
  effective: EffectivePlan;
  /** Set by the auth middleware: the first instant (Unix ms) the effective plan may read (docs/API.md §2). */
  earliestAllowed: number;
  /** Set by the auth middleware: the last instant that can hold data, now + CLOCK_LEAD_MS (history-window.ts). */
  latestPossible: number;
  /** A heavy request's slot (src/auth/heavy-requests.ts), held until its answer ends; released once. */
  heavyLease?: { release(): void };
  /** Set by the replay route when the request switches to a WebSocket (the access log says 101). */
  upgraded?: true;
}

export type AppEnv = { Variables: AppVariables };
