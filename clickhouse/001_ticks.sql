-- Every tick, exactly as docs/INGEST.md §2 derives it from the feed.
-- ORDER BY (asset_id, t, seq): every read is "one asset, a time range, in arrival order", so the
-- primary key turns each request into one contiguous range read that is already sorted; seq keeps
-- equal timestamps in arrival order and makes (asset_id, t, seq) unique.
-- PARTITION BY month: keeps parts of a size merges handle well and lets old months be dropped.
CREATE TABLE IF NOT EXISTS ticks
(
    asset_id  String,
    t         DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),  -- ms times rise within an asset: deltas compress to ~1 byte
    seq       UInt64 CODEC(Delta, ZSTD(1)),
    event     Enum8('price_change' = 1, 'book' = 2, 'last_trade_price' = 3),
    side      LowCardinality(String),
    best_bid  Float64 CODEC(Gorilla, ZSTD(1)),             -- prices move in small steps: Gorilla suits them
    best_ask  Float64 CODEC(Gorilla, ZSTD(1)),
    price     Float64 CODEC(Gorilla, ZSTD(1)),
    size      Float64 CODEC(ZSTD(1)),
    -- The book side a price_change set (BUY = bids, SELL = asks), so reconstruction can place a level
    -- (the tick's `side` is the outcome label); a last_trade_price's taker side; '' for book events.
    book_side Enum8('' = 0, 'BUY' = 1, 'SELL' = 2),
    market    LowCardinality(String),
    -- Lets a time-only filter (stats over the last 24 h) skip granules of other times.
    INDEX t_minmax t TYPE minmax GRANULARITY 1
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(t)
ORDER BY (asset_id, t, seq)
-- Remembers the hashes of the last 100k inserted blocks so a retried or re-replayed batch
-- (same rows, same insert_deduplication_token) is dropped instead of duplicated.
SETTINGS non_replicated_deduplication_window = 100000;
