import { PLANS, type PlanName } from '../plans.js';
import type { Account } from './types.js';

/** The plan view: the limits an account has now (what auth puts on each request, what /v1/me shows). */
export interface EffectivePlan {
  /** The account's plan name (kept after expiry, docs/API.md §2). */
  plan: PlanName;
  active: boolean;
  data_access_days: number;
  rate_limit_daily: number;
  /** Heavy requests it may have running at once (src/auth/heavy-requests.ts). */
  concurrent_heavy: number;
}

/** A paid plan is active until `plan_expires_at` (exclusive); free never expires. */
export function isPlanActive(account: Pick<Account, 'plan' | 'plan_expires_at'>, now: number): boolean {
  return account.plan === 'free' || (account.plan_expires_at !== null && now < account.plan_expires_at);
}

/**
 * The limits in force at `now` (docs/API.md §2): the plan's own while active; after expiry the account
 * keeps its plan name but gets free's history window, daily limit and heavy requests.
 */
export function effectivePlan(account: Pick<Account, 'plan' | 'plan_expires_at'>, now: number): EffectivePlan {
  const active = isPlanActive(account, now);
  const limits = PLANS[active ? account.plan : 'free'];
  return {
    plan: account.plan,
    active,
    data_access_days: limits.data_access_days,
    rate_limit_daily: limits.rate_limit_daily,
    concurrent_heavy: limits.concurrent_heavy,
  };
}
