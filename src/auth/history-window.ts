import type { Context } from 'hono';
import type { EffectivePlan } from '../accounts/effective-plan.js';
import type { AppEnv } from '../http/context.js';
import { ApiError } from '../http/errors.js';
import { DAY, isoUtc, utcMidnight } from '../time.js';

/**
 * The plan's history window (docs/API.md §2), for data routes. After `requireAuth`, a route:
 *
 *   - with an explicit time (`start`, `since`, `timestamp`) calls
 *       `checkHistoryWindow(c, { explicitStart: q.start })`
 *     which throws 403 `data_access_denied` when that time is before the window and returns the
 *     window's first instant (Unix ms);
 *   - without one (latest book or price, ohlcv without `start`) calls `checkHistoryWindow(c)` and
 *     clamps its query to the returned instant; if the newest data it finds is older than that, it
 *     calls `assertInHistoryWindow(c, newestT)`, which throws the same 403.
 *
 * A route that reads a point-in-time book does both through `booksInWindow` (book-in-window.ts).
 * Callers without a Hono context (the MCP tools, src/mcp) hold the same facts as a `HistoryWindow`
 * and use `assertInWindow` / `endInWindow`, which the context versions delegate to.
 *
 * `earliestAllowed(days, now)` is the pure rule: 00:00 UTC of (today − days). Free (0 days) reads
 * from today's midnight; a time exactly at the boundary is allowed, 1 ms earlier is not.
 */
export function earliestAllowed(dataAccessDays: number, now: number): number {
  return utcMidnight(now) - dataAccessDays * DAY;
}

/** A caller's window, as the auth middleware sets it on the context (context.ts). */
export interface HistoryWindow {
  /** The first instant (Unix ms) the effective plan may read. */
  earliestAllowed: number;
  /** The last instant that can hold data: now + CLOCK_LEAD_MS. */
  latestPossible: number;
  effective: EffectivePlan;
}

/** The window of an account whose effective plan is `effective`, at `now`. */
export function windowAt(effective: EffectivePlan, now: number): HistoryWindow {
  return { earliestAllowed: earliestAllowed(effective.data_access_days, now), latestPossible: now + CLOCK_LEAD_MS, effective };
}

/** The window the auth middleware put on this request's context. */
export function windowOf(c: Context<AppEnv>): HistoryWindow {
  return { earliestAllowed: c.get('earliestAllowed'), latestPossible: c.get('latestPossible'), effective: c.get('effective') };
}

export function checkHistoryWindow(c: Context<AppEnv>, range: { explicitStart?: number } = {}): number {
  const earliest = c.get('earliestAllowed');
  if (range.explicitStart !== undefined) assertInHistoryWindow(c, range.explicitStart);
  return earliest;
}

/**
 * How far an exchange timestamp may run ahead of this server's clock (clock skew between Polymarket
 * and us). No event can carry a later time than now + this, so no range needs to reach further.
 */
export const CLOCK_LEAD_MS = 60_000;

/**
 * The end of a requested range clamped to the last instant that can hold data (now + CLOCK_LEAD_MS,
 * set by the auth middleware). Every data route clamps the end of its range here: a range, a grid of
 * book rows or a replay never reaches into the future, whatever end the schema accepted (up to the
 * year 275760). The answer is the same as without the clamp, minus rows that could only be invented.
 */
export function existingEnd(c: Context<AppEnv>, end: number): number {
  return endInWindow(windowOf(c), end);
}

export function endInWindow(window: HistoryWindow, end: number): number {
  return Math.min(end, window.latestPossible);
}

export function assertInHistoryWindow(c: Context<AppEnv>, t: number): void {
  assertInWindow(windowOf(c), t);
}

export function assertInWindow(window: HistoryWindow, t: number): void {
  const earliest = window.earliestAllowed;
  if (t >= earliest) return;
  const { plan, data_access_days } = window.effective;
  throw new ApiError('data_access_denied', `Your plan (${plan}) only allows access to the last ${data_access_days} day(s) of data.`, {
    plan,
    earliest_allowed: isoUtc(earliest),
  });
}

/**
 * The end of the stored past that can no longer change (Unix ms): every event with an earlier time
 * is stored by now. The recorder stores what it receives within seconds; a minute (CLOCK_LEAD_MS,
 * the skew the other way) covers delivery and batching. Files a client keeps for good (the Tardis
 * datasets and replay slices, docs/TARDIS.md §3) are served only for periods that end before it.
 */
export function completeBefore(c: Context<AppEnv>): number {
  return c.get('latestPossible') - 2 * CLOCK_LEAD_MS;
}
