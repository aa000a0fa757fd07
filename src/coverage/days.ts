import { DAY as DAY_MS } from '../time.js';
import { clip, type Segment } from './timeline.js';

/** Conditions of a UTC day (docs/TIME-MACHINE.md §4). */
export const DAY_CONDITIONS = ['available', 'degraded', 'missing', 'unknown'] as const;
export type DayCondition = (typeof DAY_CONDITIONS)[number];

// The project's UTC helpers (src/time.ts), under the names the coverage code reads with.
export { DAY as DAY_MS, utcMidnight as utcDay } from '../time.js';
export const dateText = (day: number) => new Date(day).toISOString().slice(0, 10);

export interface DayCoverage {
  /** 00:00 UTC of the day, Unix ms. */
  day: number;
  condition: DayCondition;
  /** Milliseconds of the day (up to `now`) not captured. */
  gap_ms: number;
}

/**
 * Each UTC day from `firstDay` to `lastDay` (00:00 UTC instants), judged over the whole day up to
 * `now`: `unknown` when no capture record covers any of it, `missing` when nothing was captured,
 * `available` when captured throughout with no drifted book, `degraded` otherwise. `segments` must
 * cover [firstDay, min(lastDay + 1 day, now)); `drifted` counts drifted books per day.
 */
export function dayCoverage(segments: readonly Segment[], firstDay: number, lastDay: number, now: number, drifted: ReadonlyMap<number, number>): DayCoverage[] {
  const days: DayCoverage[] = [];
  for (let day = firstDay; day <= lastDay && day < now; day += DAY_MS) {
    const end = Math.min(day + DAY_MS, now);
    let captured = 0;
    let unknown = 0;
    for (const s of clip(segments, day, end)) {
      if (s.state === 'captured') captured += s.to - s.from;
      else if (s.state === 'unknown') unknown += s.to - s.from;
    }
    const length = end - day;
    const gap_ms = length - captured;
    const condition: DayCondition = unknown === length ? 'unknown' : captured === 0 ? 'missing' : gap_ms === 0 && !drifted.get(day) ? 'available' : 'degraded';
    days.push({ day, condition, gap_ms });
  }
  return days;
}
