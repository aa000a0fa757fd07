/**
 * Receive times on frame lines (docs/INGEST.md §3): a line may start with the time its frame was
 * received, as Tardis writes `localTimestamp` — ISO 8601 UTC with 7 decimals and `Z` (28 characters),
 * then one space: `2026-11-26T12:00:00.1234567Z {"event_type":…}`. The recorder's archive writes it,
 * frame-file replay reads it. Times are kept in Unix microseconds: the 7th decimal (100 ns) is dropped.
 */

/** Length of the prefix, its space included. */
export const RECEIVE_PREFIX_LENGTH = 29;

const PREFIX = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})\dZ $/;

/** The line prefix of a receive time in Unix µs (the 7th decimal is 0). */
export function receiveTimePrefix(us: number): string {
  const ms = Math.floor(us / 1000);
  const fraction = String(us - Math.floor(us / 1_000_000) * 1_000_000).padStart(6, '0');
  return `${new Date(ms).toISOString().slice(0, 19)}.${fraction}0Z `;
}

/**
 * The receive time a line starts with, in Unix µs; undefined when the line has no prefix (a frame
 * starts with `{` or `[`, a keep-alive is `PONG`), NaN when it starts like one but is not a valid time.
 */
export function receiveTimeOf(line: string): number | undefined {
  const first = line.charCodeAt(0);
  if (first < 0x30 || first > 0x39) return undefined;
  const m = PREFIX.exec(line.slice(0, RECEIVE_PREFIX_LENGTH));
  if (!m) return NaN;
  const ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
  // Date.UTC rolls over (month 13, second 61): only a time that prints back as written is valid.
  if (!Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 19) !== line.slice(0, 19)) return NaN;
  return ms * 1000 + Number(m[7]);
}

/** Now as a receive time: Unix µs from the monotonic clock's origin, finer than Date.now(). */
export function receivedNow(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}
