-- The newest tick size each asset's exchange books stated (book_snapshots.tick_size, 011), kept by the
-- view below: /v1/markets gives every entry its instrument as of now (docs/TIME-MACHINE.md §5) without
-- reading the snapshots of a page of assets. The max of (t, seq, tick) is the tick of the newest book;
-- a row counted twice (a re-run insert) changes no max.
CREATE TABLE IF NOT EXISTS book_tick_sizes
(
    asset_id String,
    latest   SimpleAggregateFunction(max, Tuple(DateTime64(3, 'UTC'), UInt64, Float64))
)
ENGINE = AggregatingMergeTree
ORDER BY asset_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS book_tick_sizes_mv TO book_tick_sizes AS
SELECT asset_id, max((t, seq, assumeNotNull(tick_size))) AS latest
FROM book_snapshots
WHERE is_checkpoint = 0 AND tick_size IS NOT NULL
GROUP BY asset_id;
