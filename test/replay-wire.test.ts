import { describe, expect, it } from 'vitest';
import { decimal } from '../src/replay/wire.js';

/** Numbers on the wire are decimal strings in shortest form (TIME-MACHINE.md §1), as Polymarket writes them. */
describe('decimal', () => {
  it.each([
    [0, '0'],
    [0.49, '0.49'],
    [2226, '2226'],
    [219.217767, '219.217767'],
    [0.000001, '0.000001'],
    // Where String() switches to exponents.
    [1e-7, '0.0000001'],
    [1.25e-7, '0.000000125'],
    [1e21, '1000000000000000000000'],
    [1.5e22, '15000000000000000000000'],
  ])('%s → %s', (n, text) => {
    expect(decimal(n)).toBe(text);
    expect(Number(decimal(n))).toBe(n);
  });
});

/**
 * decimal() writes numbers of at most three decimals from their thousandths instead of String(); in
 * the range where String() uses no exponent the text must be String()'s (JS's shortest round-trip
 * digits), for every double: on the 0.001 grid, next to it, at every magnitude up to 2^53.
 */
describe('decimal of numbers with few decimals', () => {
  const agrees = (n: number) => decimal(n) === String(n);

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
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
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
});
