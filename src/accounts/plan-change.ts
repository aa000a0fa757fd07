import { PLANS, type PlanName } from '../plans.js';
import { DAY, wholeSecondAtOrAfter } from '../time.js';
import { isPlanActive } from './effective-plan.js';
import type { Account } from './types.js';

type PaidPlan = Exclude<PlanName, 'free'>;

/**
 * Renewal (docs/API.md §2): paying for the plan that is active now extends it from its current expiry;
 * any other plan, or a payment after expiry, starts now and runs for the plan's duration.
 */
export function expiryAfterPurchase(account: Pick<Account, 'plan' | 'plan_expires_at'>, plan: PaidPlan, paidAt: number): number {
  const duration = PLANS[plan].duration_days * DAY;
  const extendsCurrent = account.plan === plan && isPlanActive(account, paidAt) && account.plan_expires_at !== null;
  return wholeSecondAtOrAfter((extendsCurrent ? account.plan_expires_at! : paidAt) + duration);
}

/** An operator's grant (admin CLI): the plan starts now for `days` (default: the plan's duration). */
export function expiryOfGrant(plan: PlanName, now: number, days?: number): number | null {
  const duration = days ?? PLANS[plan].duration_days;
  return plan === 'free' || duration === null ? null : wholeSecondAtOrAfter(now + duration * DAY);
}
