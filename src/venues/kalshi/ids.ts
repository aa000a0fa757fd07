/**
 * Kalshi instruments in tickhouse (docs/KALSHI.md): a Kalshi market is one binary instrument, addressed
 * everywhere (the `asset_id` and `market` columns, `asset_id=` of every /v1 route) as
 * `kalshi:<market_ticker>`, e.g. `kalshi:KXBTCD-26MAY1417-T94999.99`. Polymarket ids are decimal digits,
 * so no existing id changes meaning.
 */

export const KALSHI_PREFIX = 'kalshi:';

/** Characters of a Kalshi market ticker as Kalshi writes them (letters, digits, `-`, `.`, `_`), 1-100 of them. */
const TICKER = /^[A-Za-z0-9._-]{1,100}$/;

/** The tickhouse id of a Kalshi market ticker. Throws on a string that is no ticker. */
export function kalshiAssetId(ticker: string): string {
  if (!TICKER.test(ticker)) throw new Error(`not a Kalshi market ticker: ${JSON.stringify(ticker)}`);
  return KALSHI_PREFIX + ticker;
}

/** True for `kalshi:<ticker>`. */
export function isKalshiAssetId(id: string): boolean {
  return id.startsWith(KALSHI_PREFIX) && TICKER.test(id.slice(KALSHI_PREFIX.length));
}

/** The market ticker of a Kalshi id; throws on an id that is not one. */
export function tickerOf(id: string): string {
  if (!isKalshiAssetId(id)) throw new Error(`not a Kalshi asset id: ${JSON.stringify(id)}`);
  return id.slice(KALSHI_PREFIX.length);
}
