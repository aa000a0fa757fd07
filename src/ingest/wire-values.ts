/**
 * Values of market-channel events as the wire gives them (docs/INGEST.md §1): numbers usually as
 * strings, times as epoch-ms strings. Every parser answers a sentinel instead of throwing, so one bad
 * field makes its event malformed without stopping the ingest.
 */

/** A non-negative finite number given as a string (the wire form) or a number; -1 when invalid. */
export function num(v: unknown): number {
  const n = typeof v === 'string' ? (v === '' ? NaN : Number(v)) : typeof v === 'number' ? v : NaN;
  return Number.isFinite(n) && n >= 0 ? n : -1;
}

/** Epoch milliseconds as an integer; -1 when invalid. */
export function time(v: unknown): number {
  const n = num(v);
  return Number.isInteger(n) ? n : -1;
}

/** Absent (missing, null, "") → undefined; present but invalid → NaN. */
export function optionalNum(v: unknown): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n = num(v);
  return n < 0 ? NaN : n;
}

/** An array of non-empty strings, or a JSON-encoded string holding one (Gamma sends lists that way); null otherwise. */
export function stringArray(value: unknown): string[] | null {
  let v = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return null;
    }
  }
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && x !== '')) return null;
  return v as string[];
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
