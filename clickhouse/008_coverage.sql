-- Coverage (docs/TIME-MACHINE.md §4): what a live recorder captured, and whether exchange books matched
-- the book rebuilt from the events before them. /v1/coverage and the coverage of /v1/markets read
-- only these tables and rollups, never ticks.

-- The recorders' capture records (src/clickhouse/rows.ts CaptureRow), one row per asset a record
-- names; run records (start, stop) have asset_id ''. Times are the recorder's wall clock.
-- ORDER BY (asset_id, t, seq): an asset's records are one key range, in the order they happened.
CREATE TABLE IF NOT EXISTS capture_events
(
    asset_id String,
    t        DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    seq      UInt64 CODEC(Delta, ZSTD(1)),
    run      LowCardinality(String),
    socket   UInt32,
    kind     Enum8('start' = 1, 'stop' = 2, 'subscribe' = 3, 'open' = 4, 'close' = 5, 'resync' = 6)
)
ENGINE = MergeTree
ORDER BY (asset_id, t, seq)
-- Retried or re-replayed batches are dropped as in ticks.
SETTINGS non_replicated_deduplication_window = 100000;

-- The drift check of every exchange `book` (src/clickhouse/rows.ts BookCheckRow), keyed like its tick.
CREATE TABLE IF NOT EXISTS book_checks
(
    asset_id         String,
    t                DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    seq              UInt64 CODEC(Delta, ZSTD(1)),
    verdict          Enum8('unchecked' = 0, 'verified' = 1, 'drifted' = 2),
    levels_differing UInt32
)
ENGINE = MergeTree
ORDER BY (asset_id, t, seq)
SETTINGS non_replicated_deduplication_window = 100000;

-- Books stored before this migration were never checked: they count as exchange books, unchecked.
-- The emptiness guard keeps a re-run of this migration from adding them again.
INSERT INTO book_checks
SELECT asset_id, t, seq, 'unchecked', 0
FROM book_snapshots
WHERE is_checkpoint = 0 AND (SELECT count() FROM book_checks) = 0;

-- Ticks per asset and UTC day, for the `ticks` of /v1/coverage's days.
CREATE TABLE IF NOT EXISTS ticks_1d
(
    asset_id String,
    day      Date,
    ticks    SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
ORDER BY (asset_id, day)
-- See candles_1m: a deduplicated insert into ticks must be dropped here too.
SETTINGS non_replicated_deduplication_window = 100000;

CREATE MATERIALIZED VIEW IF NOT EXISTS ticks_1d_mv TO ticks_1d AS
SELECT asset_id, toDate(t) AS day, count() AS ticks
FROM ticks
GROUP BY asset_id, day;

-- Backfill, guarded like candles_1h's (migrations run before ingest starts).
INSERT INTO ticks_1d
SELECT asset_id, toDate(t) AS day, count()
FROM ticks
WHERE (SELECT count() FROM ticks_1d) = 0
GROUP BY asset_id, day;
