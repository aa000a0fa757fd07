-- One-hour candles, same states as candles_1m: /v1/ohlcv at 1h, 4h and 1d merges these, so 1,000
-- daily candles read ~24k rows instead of ~1.4M one-minute rows.
CREATE TABLE IF NOT EXISTS candles_1h
(
    asset_id String,
    bucket   DateTime('UTC'),
    open     AggregateFunction(argMin, Float64, Tuple(DateTime64(3, 'UTC'), UInt64)),
    high     SimpleAggregateFunction(max, Float64),
    low      SimpleAggregateFunction(min, Float64),
    close    AggregateFunction(argMax, Float64, Tuple(DateTime64(3, 'UTC'), UInt64)),
    volume   SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYear(bucket)
ORDER BY (asset_id, bucket)
-- See candles_1m: a deduplicated insert into ticks must be dropped here too.
SETTINGS non_replicated_deduplication_window = 100000;

CREATE MATERIALIZED VIEW IF NOT EXISTS candles_1h_mv TO candles_1h AS
SELECT
    asset_id,
    toStartOfHour(t) AS bucket,
    argMinState(best_bid, (t, seq)) AS open,
    max(best_bid) AS high,
    min(best_bid) AS low,
    argMaxState(best_bid, (t, seq)) AS close,
    count() AS volume
FROM ticks
WHERE event = 'price_change'
GROUP BY asset_id, bucket;

-- Backfill from the 1m rollup (migrations run before ingest starts, so nothing is counted twice);
-- the emptiness guard keeps a re-run of this migration from adding the history again.
INSERT INTO candles_1h
SELECT asset_id, toStartOfHour(bucket) AS hour, argMinMergeState(open), max(high), min(low), argMaxMergeState(close), sum(volume)
FROM candles_1m
WHERE (SELECT count() FROM candles_1h) = 0
GROUP BY asset_id, hour;
