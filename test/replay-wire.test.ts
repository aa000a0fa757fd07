import { describe, expect, it } from 'vitest';
import { decimal } from '../src/replay/wire.js';

/** Numbers on the wire are decimal strings in shortest form (docs/TIME-MACHINE.md §1), as Polymarket writes them. */
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
