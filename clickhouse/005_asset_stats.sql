-- Per-asset activity for /v1/markets and /v1/markets/stats, maintained at insert time so listing
-- markets never scans ticks. One row per asset after merges; readers still aggregate (GROUP BY).
CREATE TABLE IF NOT EXISTS asset_stats
(
    asset_id           String,
    market             SimpleAggregateFunction(any, String),
    first_seen         SimpleAggregateFunction(min, DateTime64(3, 'UTC')),
    last_seen          SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
    total_ticks        SimpleAggregateFunction(sum, UInt64),
    price_change_ticks SimpleAggregateFunction(sum, UInt64),
    book_ticks         SimpleAggregateFunction(sum, UInt64),
    last_trade_ticks   SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
ORDER BY asset_id
-- See candles_1m: deduplicated ticks inserts must not be counted here either.
SETTINGS non_replicated_deduplication_window = 100000;

CREATE MATERIALIZED VIEW IF NOT EXISTS asset_stats_mv TO asset_stats AS
SELECT
    asset_id,
    any(market) AS market,
    min(t) AS first_seen,
    max(t) AS last_seen,
    count() AS total_ticks,
    countIf(event = 'price_change') AS price_change_ticks,
    countIf(event = 'book') AS book_ticks,
    countIf(event = 'last_trade_price') AS last_trade_ticks
FROM ticks
GROUP BY asset_id;

-- Ticks per minute over all assets: /v1/markets/stats counts the last 24 h from whole minutes here
-- and reads raw ticks only for the two partial minutes at the edges.
CREATE TABLE IF NOT EXISTS activity_1m
(
    bucket DateTime('UTC'),
    ticks  SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
ORDER BY bucket
SETTINGS non_replicated_deduplication_window = 100000;

CREATE MATERIALIZED VIEW IF NOT EXISTS activity_1m_mv TO activity_1m AS
SELECT toStartOfMinute(t) AS bucket, count() AS ticks
FROM ticks
GROUP BY bucket;
