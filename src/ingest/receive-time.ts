import { isoMicros } from '../time.js';

/**
 * Receive times on frame lines (docs/INGEST.md §3): a line may start with the time its frame was
 * received, as Tardis writes `localTimestamp` — ISO 8601 UTC with 7 decimals and `Z` (28 characters),
 * then one space: `2026-11-26T12:00:00.1234567Z {"event_type":…}`. The recorder's archive writes it,
 * frame-file replay reads it. Times are kept in Unix microseconds: the 7th decimal (100 ns) is dropped.
 */

/** Length of the prefix, its space included. */
export const RECEIVE_PREFIX_LENGTH = 29;

/** The last second a prefix named (its first 19 characters) and its Unix ms: consecutive lines share it. */
let lastSecond = '';
let lastSecondMs = 0;

/** The line prefix of a receive time in Unix µs (the 7th decimal is 0). */
export function receiveTimePrefix(us: number): string {
  const ms = Math.floor(us / 1000);
  const fraction = String(us - Math.floor(us / 1_000_000) * 1_000_000).padStart(6, '0');
  return `${new Date(ms).toISOString().slice(0, 19)}.${fraction}0Z `;
}

/**
 * The receive time a line starts with, in Unix µs; undefined when the line has no prefix (a frame
 * starts with `{` or `[`, a keep-alive is `PONG`), NaN when it starts like one but is not a valid time.
 * The date and time are read by the one ISO 8601 reader (a date that does not exist is invalid), once
 * per second of lines: a file's lines come in time order, so most share the previous line's second.
 */
export function receiveTimeOf(line: string): number | undefined {
  const first = line.charCodeAt(0);
  if (first < 0x30 || first > 0x39) return undefined;
  if (line.length < RECEIVE_PREFIX_LENGTH || line[19] !== '.' || line[27] !== 'Z' || line[28] !== ' ') return NaN;
  let micros = 0;
  for (let i = 20; i < 27; i++) {
    const digit = line.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return NaN;
    // The 7th decimal (100 ns) is checked, then dropped.
    if (i < 26) micros = micros * 10 + digit;
  }
  if (!line.startsWith(lastSecond) || lastSecond === '') {
    const second = line.slice(0, 19);
    const us = isoMicros(`${second}Z`);
    if (us === undefined) return NaN;
    lastSecond = second;
    lastSecondMs = us / 1000;
  }
  return lastSecondMs * 1000 + micros;
}

/** Now as a receive time: Unix µs from the monotonic clock's origin, finer than Date.now(). */
export function receivedNow(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}
