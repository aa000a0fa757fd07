import { describe, expect, it } from 'vitest';
import { MAX_NUMBER_BYTES, numberText, writeInteger, writeNumber } from '../src/number-text.js';

/**
 * numberText() and writeNumber() write numbers of at most three decimals from their thousandths
 * instead of String(); the text must be String()'s (JS's shortest round-trip digits) for every double: on the 0.001 grid,
 * next to it, at every magnitude from 2^-10 up to 2^53, and the exponent forms.
 */
describe('numberText and writeNumber', () => {
  const buf = Buffer.alloc(MAX_NUMBER_BYTES + 2, 0x2a);
  /** writeNumber's bytes, checked to stay within MAX_NUMBER_BYTES after a one-byte offset. */
  const written = (n: number) => {
    const end = writeNumber(buf, 1, n);
    return end - 1 <= MAX_NUMBER_BYTES ? buf.toString('latin1', 1, end) : `overran: ${end}`;
  };
  const agrees = (n: number) => numberText(n) === String(n) && written(n) === String(n);

  it('every thousandth up to 2000, both signs', () => {
    const wrong: number[] = [];
    for (let k = 0; k <= 2_000_000; k++) {
      if (!agrees(k / 1000)) wrong.push(k / 1000);
      if (!agrees(-k / 1000)) wrong.push(-k / 1000);
    }
    expect(wrong).toEqual([]);
  });

  it('thousandths, cents and the doubles next to them at every binary magnitude', () => {
    const wrong: number[] = [];
    let seed = 15;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let exp = -10; exp <= 53; exp++) {
      for (let i = 0; i < 2000; i++) {
        const x = 2 ** exp * (1 + random());
        for (const n of [Math.round(x * 1000) / 1000, Math.round(x * 100) / 100, Math.round(x), x]) {
          const next = n + Math.abs(n) * Number.EPSILON;
          for (const m of [n, -n, next]) if (!agrees(m)) wrong.push(m);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('numbers String() writes with an exponent, and the non-finite ones', () => {
    for (const n of [1e-7, -2.5e-9, -1.2345678901234567e-6, 1e21, 1.5e300, 5e-324, -1.7976931348623157e308, Infinity, -Infinity, NaN, -0]) {
      expect(numberText(n)).toBe(String(n));
      expect(written(n)).toBe(String(n));
    }
  });
});

describe('writeInteger', () => {
  it('writes String(n) for integers of every length, and for what is not a safe non-negative integer', () => {
    const buf = Buffer.alloc(40);
    const text = (n: number) => buf.toString('latin1', 0, writeInteger(buf, 0, n));
    for (let p = 1; p <= Number.MAX_SAFE_INTEGER; p *= 10) for (const n of [p - 1, p, p + 1, 3 * p]) expect(text(n)).toBe(String(n));
    for (const n of [Number.MAX_SAFE_INTEGER, 1_788_220_800_000, -1, -1_700_000_000_000, 2 ** 60, 0.5]) expect(text(n)).toBe(String(n));
  });
});
