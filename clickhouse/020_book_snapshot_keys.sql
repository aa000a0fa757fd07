-- Where each asset's snapshots are (exchange `book` or checkpoint): the time of every snapshot row of
-- book_events, kept by the engine itself (the view below), so every writer is covered as for
-- book_writes. The book segment cache (src/book-history/snapshot-directory.ts) reads an asset's
-- times once, and then answers a lookup it does not hold with a read of exactly one segment (from
-- the snapshot at or before the instant to the next one): finding that snapshot inside the read
-- doubled its engine time (a scalar subquery is a second read of the same rows), and misses of
-- several instants are read together only when each one's key range is known beforehand.
-- ORDER BY (asset_id, t): an asset's times are one key range, in order; rows are 10 bytes before
-- compression (the bench's 141k snapshots take 120 kB on disk). A row written twice (a retried
-- block, a re-run of the backfill below cut short) changes nothing: readers take distinct times.
CREATE TABLE IF NOT EXISTS book_snapshot_keys
(
    asset_id String,
    t        DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1))
)
ENGINE = MergeTree
ORDER BY (asset_id, t)
-- Retried or re-replayed batches are dropped as in book_events.
SETTINGS non_replicated_deduplication_window = 100000;

CREATE MATERIALIZED VIEW IF NOT EXISTS book_snapshot_keys_mv TO book_snapshot_keys AS
SELECT asset_id, t
FROM book_events
WHERE kind != 'price_change';

-- Snapshots stored before this migration (one read of book_events: on a large ClickHouse server,
-- expect the first `npm run migrate` after it to take a while). The view exists first, so no
-- concurrent insert is missed; the emptiness guard keeps a re-run from adding them again.
INSERT INTO book_snapshot_keys
SELECT asset_id, t
FROM book_events
WHERE kind != 'price_change' AND (SELECT count() FROM book_snapshot_keys) = 0;
