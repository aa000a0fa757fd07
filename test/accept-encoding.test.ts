import { describe, expect, it } from 'vitest';
import { acceptedEncodings } from '../src/http/accept-encoding.js';

/** The one Accept-Encoding parser (exports and the dashboard both use it), per RFC 9110 §12.5.3. */
describe('acceptedEncodings', () => {
  it.each([
    [undefined, []],
    ['', []],
    ['gzip', ['gzip']],
    ['GZip, ZSTD', ['gzip', 'zstd']],
    ['gzip;q=0, zstd', ['zstd']],
    ['gzip; q=0.000, br;q=0.5', ['br']],
    ['gzip;q=1.0, identity; q=0.5, *;q=0', ['gzip', 'identity']],
    ['*', ['*']],
    ['deflate;q=abc, gzip', ['gzip']],
    [' , gzip ,', ['gzip']],
  ])('%j → %j', (header, expected) => {
    expect([...acceptedEncodings(header)].sort()).toEqual([...expected].sort());
  });
});
