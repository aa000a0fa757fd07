/**
 * Kalshi instruments in tickhouse (docs/KALSHI.md): a market ticker is addressed as `kalshi:<market_ticker>`
 * in `asset_id` (and `market`) and in every /v1 route. Polymarket ids are decimal digits: nothing existing
 * changes meaning.
 */
const PREFIX = 'kalshi:';

/** The asset id of a Kalshi market ticker. */
export function kalshiAssetId(ticker: string): string {
  return `${PREFIX}${ticker}`;
}

/** Whether an asset id names a Kalshi instrument. */
export function isKalshiAssetId(id: string): boolean {
  return id.startsWith(PREFIX) && id.length > PREFIX.length;
}

/** The market ticker of a Kalshi asset id. */
export function tickerOf(id: string): string {
  return id.slice(PREFIX.length);
}
