import type { Account } from '../accounts/types.js';
import type { EffectivePlan } from '../http/context.js';
import { PLANS } from '../plans.js';

/** A paid plan is active until `plan_expires_at` (exclusive); free never expires. */
export function isPlanActive(account: Pick<Account, 'plan' | 'plan_expires_at'>, now: number): boolean {
  return account.plan === 'free' || (account.plan_expires_at !== null && now < account.plan_expires_at);
}

/**
 * The limits in force at `now` (API.md §2): the plan's own while active; after expiry the account
 * keeps its plan name but gets free's history window and daily limit.
 */
export function effectivePlan(account: Pick<Account, 'plan' | 'plan_expires_at'>, now: number): EffectivePlan {
  const active = isPlanActive(account, now);
  const limits = PLANS[active ? account.plan : 'free'];
  return { plan: account.plan, active, data_access_days: limits.data_access_days, rate_limit_daily: limits.rate_limit_daily };
}
