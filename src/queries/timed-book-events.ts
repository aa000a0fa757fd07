import { clampTime, forwardSql } from './orderbook.js';
import { RECEIVE_TIME_US } from './receive-time.js';

/**
 * Every book event of an asset from the key {from_ms, from_seq} (a snapshot's) up to {to}, in
 * (t, seq, kind) order, with its receive time in µs after BINARY_EVENT_COLUMNS: the read of the Tardis
 * book files (src/book-history/event-fold.ts), which give every row its local_timestamp. One
 * primary-key range read in order, as RowBinary (TimedEventDecoder).
 *
 * `kind` after (t, seq): a checkpoint is stored under the seq of the price_change it follows (the
 * normalizer's emitSnapshot), so the two tie on (t, seq) and the engine returned them in either order.
 * Checkpoint first, the incremental_book_L2 writer wrote the change as the checkpoint's diff and then
 * again as itself: a duplicate row, a duplicate tick after `import tardis` (test/import-tardis-roundtrip).
 * price_change (1) before checkpoint (3): the checkpoint then changes nothing, as docs/TARDIS.md §1.1 says.
 */
const TIMED_FORWARD_SQL = forwardSql(`, ${RECEIVE_TIME_US} AS local_us`, ', kind');

export function timedForwardQuery(assetId: string, from: { ms: number; seq: number }, to: number, usualMarket: string) {
  return { sql: TIMED_FORWARD_SQL, params: { asset_id: assetId, from_ms: from.ms, from_seq: from.seq, to: clampTime(to), usual_market: usualMarket } };
}
