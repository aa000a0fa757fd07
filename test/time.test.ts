import { describe, expect, it } from 'vitest';
import { isoMicros, isoMillis, MAX_TIME, parseTime } from '../src/time.js';

/**
 * The one ISO 8601 reader (src/time.ts) against the calendar: expected values from Date.UTC and
 * Date.parse on full ISO strings (the engine's own reading of what does exist), the non-existent dates
 * from the Gregorian rules (30 days hath September…, leap years every 4th but centuries but every 400th).
 */
describe('ISO 8601 times', () => {
  it('reads dates that exist, and none that does not', () => {
    expect(isoMillis('2026-02-28')).toBe(Date.UTC(2026, 1, 28));
    expect(isoMillis('2028-02-29')).toBe(Date.UTC(2028, 1, 29));
    expect(isoMillis('2000-02-29')).toBe(Date.UTC(2000, 1, 29));
    expect(isoMillis('2026-12-31')).toBe(Date.UTC(2026, 11, 31));
    for (const missing of ['2026-02-29', '2026-02-30', '2100-02-29', '2026-04-31', '2026-09-31', '2026-13-01', '2026-00-10', '2026-01-00', '2026-01-32']) {
      expect(isoMillis(missing), missing).toBeUndefined();
    }
    // Years below 100 are those years (Date.UTC would read 0050 as 1950).
    expect(isoMillis('0050-01-01')).toBe(Date.parse('0050-01-01T00:00:00.000Z'));
  });

  it('reads times with Z or an offset, to the µs', () => {
    const ten = Date.UTC(2026, 4, 1, 10);
    expect(isoMillis('2026-05-01T10:00Z')).toBe(ten);
    expect(isoMillis('2026-05-01T10:00:07Z')).toBe(ten + 7000);
    expect(isoMillis('2026-05-01T12:00+02:00')).toBe(ten);
    expect(isoMillis('2026-05-01T12:00:00+0200')).toBe(ten);
    expect(isoMillis('2026-05-01T12:00:00+02')).toBe(ten);
    expect(isoMillis('2026-05-01T04:30:00-05:30')).toBe(ten);
    // Tardis's receive stamps: 7 decimals; the ms and the µs beyond them, the rest dropped.
    expect(isoMillis('2026-05-01T10:00:00.1234567Z')).toBe(ten + 123);
    expect(isoMicros('2026-05-01T10:00:00.1234567Z')).toBe(ten * 1000 + 123_456);
    expect(isoMicros('2026-05-01T10:00:00.5Z')).toBe(ten * 1000 + 500_000);
    expect(isoMicros('2026-05-01')).toBe(Date.UTC(2026, 4, 1) * 1000);
    for (const bad of ['2026-05-01T24:00Z', '2026-05-01T10:60Z', '2026-05-01T10:00:60Z', '2026-05-01T10:00', '2026-05-01T10:00+24:00', '2026-5-1', 'x', '']) {
      expect(isoMillis(bad), bad).toBeUndefined();
    }
  });
});

describe('parseTime and MAX_TIME', () => {
  it('MAX_TIME is the largest JavaScript date', () => {
    expect(new Date(MAX_TIME).toISOString()).toBe('+275760-09-13T00:00:00.000Z');
    expect(new Date(MAX_TIME + 1).getTime()).toBeNaN();
  });

  it('reads Unix ms or ISO 8601 from 1970 to MAX_TIME, nothing else', () => {
    expect(parseTime('1788264000000')).toBe(1_788_264_000_000);
    expect(parseTime('0')).toBe(0);
    expect(parseTime(String(MAX_TIME))).toBe(MAX_TIME);
    expect(parseTime(String(MAX_TIME + 1))).toBeUndefined();
    expect(parseTime('2026-09-01T12:00:00Z')).toBe(Date.UTC(2026, 8, 1, 12));
    expect(parseTime('2026-02-30')).toBeUndefined();
    expect(parseTime('1969-12-31')).toBeUndefined();
    expect(parseTime('-5')).toBeUndefined();
    expect(parseTime('1.5')).toBeUndefined();
    expect(parseTime('')).toBeUndefined();
  });
});
