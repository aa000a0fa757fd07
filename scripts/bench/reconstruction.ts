import { EVENTS_READ } from '../../src/book-history/cache.js';
import { MAX_TIME_MS, POINT_READ } from '../../src/queries/orderbook.js';

/**
 * The raw engine's reconstruction query, the baseline of the lookup benches: the last EVENTS_READ
 * book events up to T, newest first (they hold the snapshot T's book starts from, with the default
 * checkpoints), read as JSON. One primary-key range read per lookup, with nothing kept: what the
 * service ran for every lookup before the segment cache, and what issue 14 measured it against.
 */
const RECONSTRUCTION_SQL = `
SELECT toUnixTimestamp64Milli(t) AS ms, seq, kind, market, price, size, book_side, bids, asks
FROM book_events
WHERE asset_id = {asset_id:String} AND t <= fromUnixTimestamp64Milli({at:Int64}, 'UTC')
ORDER BY t DESC, seq DESC
LIMIT ${EVENTS_READ}
SETTINGS ${POINT_READ}`;

export function reconstructionQuery(assetId: string, at: number) {
  return { sql: RECONSTRUCTION_SQL, params: { asset_id: assetId, at: Math.min(at, MAX_TIME_MS) } };
}
