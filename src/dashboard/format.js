/** Number and time formatting. Every time on the page is UTC, labelled as such. */

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const amount = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2 });

export const fmtInt = (n) => (n === null || n === undefined ? '—' : integer.format(n));
export const fmtSize = (n) => (n === null || n === undefined ? '—' : amount.format(n));
export const fmtUsd = (n) => usd.format(n);

/** Outcome prices live in 0..1 with ticks of 0.01 or 0.001: three decimals, more only when present. */
export function fmtPrice(p) {
  if (p === null || p === undefined) return '—';
  const exact = Number(p.toFixed(6)).toString();
  const decimals = exact.includes('.') ? exact.split('.')[1].length : 0;
  return p.toFixed(Math.max(3, decimals));
}

/** `YYYY-MM-DD HH:MM:SS` (UTC) from Unix ms; `withMs` keeps the milliseconds. */
export function fmtTime(ms, withMs = false) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, withMs ? 23 : 19)}`;
}

export const fmtDate = (ms) => new Date(ms).toISOString().slice(0, 10);

/** The API's `first_seen`/`datetime` text (`YYYY-MM-DD HH:MM:SS.mmm`, UTC, no zone) to Unix ms. */
export const parseUtcText = (text) => Date.parse(`${text.replace(' ', 'T')}Z`);

/**
 * Time fields are plain text in the API's own `YYYY-MM-DD HH:MM:SS.mmm` form, read as UTC: the
 * browser's datetime-local would show local, 12-hour, locale-dependent text.
 */
export const TIME_PATTERN = '\\d{4}-\\d{2}-\\d{2}[ T]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,3})?)?';
export function parseTimeInput(value) {
  const m = new RegExp(`^${TIME_PATTERN}$`).test(value.trim()) ? value.trim().replace('T', ' ') : null;
  return m ? parseUtcText(m) : NaN;
}
export const toTimeInput = (ms) => fmtTime(ms, true);

/** "3h 12m" until `ms`. */
export function fmtDuration(ms) {
  const minutes = Math.max(0, Math.round(ms / 60_000));
  const d = Math.floor(minutes / 1440);
  const hrs = Math.floor((minutes % 1440) / 60);
  const min = minutes % 60;
  if (d) return `${d}d ${hrs}h`;
  return hrs ? `${hrs}h ${min}m` : `${min}m`;
}

/** The next 00:00 UTC, when daily counters reset (docs/API.md §2). */
export function nextUtcMidnight(now = Date.now()) {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
}

/** First instant the plan may read: UTC midnight of today − days (docs/API.md §2). */
export function earliestAllowed(dataAccessDays, now = Date.now()) {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - dataAccessDays);
}

/** "th_live_abcd…wxyz": enough to recognise a key without showing it. */
export const maskKey = (key) => (key.length > 16 ? `${key.slice(0, 12)}…${key.slice(-4)}` : '••••');

export const shortId = (id) => (id.length > 14 ? `${id.slice(0, 6)}…${id.slice(-6)}` : id);
