-- What was written to book_events, when, by anyone: the book segment cache of every API process
-- (src/book-history/cache.ts) asks it whether a cached segment is still what the table holds.
-- One row per asset per inserted block, written by the engine itself (the view below), so every
-- writer is covered without its cooperation: the recorder, a replay, an INSERT typed by hand, in
-- this process or any other on the same server. History is immutable except for such late rows,
-- and a segment of [t_first, t_last] is stale exactly when a row with t_min <= t_last and
-- t_max >= t_first was added after it was read; the cache compares the count of such rows.
-- Rows are never updated or deleted (a count only grows); one per block keeps the table small
-- (the recorder flushes about once a second).
CREATE TABLE IF NOT EXISTS book_writes
(
    asset_id String,
    t_min    DateTime64(3, 'UTC'),
    t_max    DateTime64(3, 'UTC'),
    events   UInt64
)
ENGINE = MergeTree
ORDER BY (asset_id, t_min);

CREATE MATERIALIZED VIEW IF NOT EXISTS book_writes_mv TO book_writes AS
SELECT asset_id, min(t) AS t_min, max(t) AS t_max, count() AS events
FROM book_events
GROUP BY asset_id;
