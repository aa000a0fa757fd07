/** UTC calendar helpers shared by counters, history windows and the JSON the API prints. */

const DAY_MS = 86_400_000;

/** `YYYY-MM-DD` of the UTC day containing `ms`: the key of that day's request counter. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** `YYYY-MM-DDTHH` of the UTC hour containing `ms`: the registration flood-guard window. */
export function utcHour(ms: number): string {
  return new Date(ms).toISOString().slice(0, 13);
}

/** 00:00 UTC of the day containing `ms`. */
export function utcMidnight(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** 00:00 UTC of the day after the one containing `ms` (when the daily counter resets). */
export function nextUtcMidnight(ms: number): number {
  return utcMidnight(ms) + DAY_MS;
}

/**
 * ISO 8601 to the second with an explicit `+00:00` offset (docs/API.md §1), e.g.
 * `2026-06-25T00:00:00+00:00`. Instants the API prints this way (window starts, plan expiries) are
 * whole seconds by construction (see `wholeSecondAtOrAfter`), so nothing is lost.
 */
export function isoUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}+00:00`;
}

/** Plan expiries are kept in whole seconds (rounded up: the buyer never loses time) so they print exactly. */
export function wholeSecondAtOrAfter(ms: number): number {
  return Math.ceil(ms / 1000) * 1000;
}

export const DAY = DAY_MS;
