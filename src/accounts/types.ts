import type { PlanName } from '../plans.js';

/** An account as stored. Times are Unix milliseconds. The API key itself is never stored. */
export interface Account {
  id: string;
  email: string | null;
  /** The plan last bought (or free); may have expired, see effectivePlan(). */
  plan: PlanName;
  /** null for free. */
  plan_expires_at: number | null;
  created_at: number;
}
