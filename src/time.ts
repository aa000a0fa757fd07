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

/**
 * The largest time tickhouse accepts anywhere (docs/API.md §1): the largest JavaScript date,
 * +275760-09-13. Reads clamp it to what the store can hold (queries/orderbook.ts MAX_TIME_MS).
 */
export const MAX_TIME = 8_640_000_000_000_000;

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?))?$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * The one ISO 8601 reader: `YYYY-MM-DD` (00:00 UTC of that day), or a date and time
 * `YYYY-MM-DDThh:mm[:ss[.fraction]]` followed by `Z` or an offset (`±hh:mm`, `±hhmm`, `±hh`). Every field
 * is checked against the calendar (Date.parse turns 2026-02-30 into March 2): a date that does not exist
 * is undefined, as is anything else that is not this form. `micro`: the fraction's µs beyond the ms.
 */
function readIso(text: string): { ms: number; micro: number } | undefined {
  const m = ISO_TIME.exec(text);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1] + (month === 2 && leap ? 1 : 0)) return undefined;
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offset = 0;
  if (m[8] && m[8] !== 'Z') {
    const digits = m[8].slice(1).replace(':', '');
    const [oh, om] = [Number(digits.slice(0, 2)), Number(digits.slice(2) || 0)];
    if (oh > 23 || om > 59) return undefined;
    offset = (m[8][0] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  const fraction = (m[7] ?? '').padEnd(6, '0');
  return { ms: date.getTime() - offset + Number(fraction.slice(0, 3)), micro: Number(fraction.slice(3, 6)) };
}

/** An ISO 8601 time (readIso) in Unix µs, undefined when it is not one or is too far out for µs in a double. */
export function isoMicros(text: string): number | undefined {
  const t = readIso(text);
  const us = t === undefined ? undefined : t.ms * 1000 + t.micro;
  return us !== undefined && Number.isSafeInteger(us) ? us : undefined;
}

/** An ISO 8601 time (readIso) in Unix ms (a finer fraction dropped), undefined when it is not one. */
export function isoMillis(text: string): number | undefined {
  return readIso(text)?.ms;
}

/**
 * A time as people type it on a command line or in a tool call: Unix ms (digits) or ISO 8601; undefined
 * when it is neither, is before 1970 or is after MAX_TIME.
 */
export function parseTime(text: string): number | undefined {
  const ms = /^\d{1,16}$/.test(text) ? Number(text) : isoMillis(text);
  return ms !== undefined && ms >= 0 && ms <= MAX_TIME ? ms : undefined;
}
