/**
 * The plan table of docs/API.md §2: the single source of truth for prices, durations and limits.
 * `concurrent_heavy`: heavy requests (exports, Tardis files and slices, replays) one account may have
 * running at once, on every process of the service together (src/auth/heavy-requests.ts).
 */
export const PLANS = {
  free: { price_usd: 0, duration_days: null, data_access_days: 0, rate_limit_daily: 100, concurrent_heavy: 1 },
  daily: { price_usd: 1.0, duration_days: 1, data_access_days: 7, rate_limit_daily: 1_000, concurrent_heavy: 2 },
  monthly: { price_usd: 59.9, duration_days: 30, data_access_days: 30, rate_limit_daily: 50_000, concurrent_heavy: 4 },
  unlimited: { price_usd: 99.9, duration_days: 30, data_access_days: 3650, rate_limit_daily: 500_000, concurrent_heavy: 8 },
} as const satisfies Record<
  string,
  { price_usd: number; duration_days: number | null; data_access_days: number; rate_limit_daily: number; concurrent_heavy: number }
>;

export type PlanName = keyof typeof PLANS;
export const PLAN_NAMES = Object.keys(PLANS) as PlanName[];
export const PAID_PLANS = PLAN_NAMES.filter((p) => p !== 'free') as Exclude<PlanName, 'free'>[];
