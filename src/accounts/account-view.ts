import { isoUtc } from '../time.js';
import { effectivePlan } from './effective-plan.js';
import type { Account } from './types.js';

/** The account as GET /v1/me shows it (docs/API.md §4), members in contract order. */
export function accountView(account: Account, now: number, requestsToday: number) {
  const effective = effectivePlan(account, now);
  return {
    id: account.id,
    email: account.email,
    plan: account.plan,
    plan_active: effective.active,
    plan_expires_at: account.plan_expires_at === null ? null : isoUtc(account.plan_expires_at),
    data_access_days: effective.data_access_days,
    rate_limit_daily: effective.rate_limit_daily,
    requests_today: requestsToday,
  };
}
