/**
 * What the numbers mean, in the words of the "Data semantics" section of docs/guides/api.md: the OpenAPI document says
 * the same sentences, in its description and on the fields they concern (test/data-semantics.test.ts
 * finds each one, whole, in both: test/readme-endpoints.test.ts). Where they restate docs/API.md, that file is the contract.
 */
export const SEMANTICS = {
  candles:
    'Candles are of the best bid: open, high, low and close are the best bid after the first, highest, lowest and last price_change tick of ' +
    'the bucket (docs/API.md §4).',
  volume: "A candle's volume is the number of price_change ticks in its bucket, not traded shares: trades are the last_trade_price ticks.",
  buckets: 'Candle buckets are aligned to UTC (multiples of the resolution since the Unix epoch); a bucket without price_change ticks has no candle.',
  side:
    "The side of a tick or a market entry is the token's outcome label, upper-cased (YES, NO, UP, …; UNKNOWN until market metadata names it), " +
    'not a book side or a trade direction.',
  times:
    'Times are Unix milliseconds (UTC) in every parameter and in timestamp, t, start, end, since and until, except the t of /v1/prices-history, ' +
    'which is Unix seconds.',
  zones:
    'datetime, first_seen and last_seen are UTC text YYYY-MM-DD HH:MM:SS.mmm without a zone suffix; plan_expires_at, expires_at and ' +
    'earliest_allowed are ISO 8601 with +00:00.',
  fields:
    'With fields= on /v1/ticks, book_side is the book side a price_change moved (bid or ask), taker_side the side of the taker of a trade (buy or ' +
    'sell), and local_t when tickhouse received the frame, Unix milliseconds (UTC) with up to 3 decimals.',
  ranges: 'Ranges are inclusive at both ends: start ≤ t ≤ end, and since ≤ t ≤ until.',
  rateLimit: 'X-RateLimit-Reset is the next UTC midnight in Unix seconds; Retry-After is a number of seconds.',
} as const;

export type SemanticsKey = keyof typeof SEMANTICS;

/** The sentences for `keys`, one after the other (a field's description). */
export const semantics = (...keys: SemanticsKey[]) => keys.map((k) => SEMANTICS[k]).join(' ');

/** The document's description: every sentence, one paragraph each. */
export const SEMANTICS_DESCRIPTION = `Data semantics:\n\n${Object.values(SEMANTICS).join('\n\n')}`;
