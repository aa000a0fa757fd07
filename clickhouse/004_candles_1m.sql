-- One-minute candles over best_bid of price_change ticks, kept up to date by a materialized view.
-- Coarser resolutions merge these states, so /v1/ohlcv never scans raw ticks.
-- open/close are argMin/argMax by (t, seq): first/last tick by time, then arrival order.
-- ORDER BY (asset_id, bucket): a candle request is one key range of one asset.
CREATE TABLE IF NOT EXISTS candles_1m
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
PARTITION BY toYYYYMM(bucket)
ORDER BY (asset_id, bucket)
-- A deduplicated insert into ticks must also be dropped here, or a retried batch would count twice.
SETTINGS non_replicated_deduplication_window = 100000;

CREATE MATERIALIZED VIEW IF NOT EXISTS candles_1m_mv TO candles_1m AS
SELECT
    asset_id,
    toStartOfMinute(t) AS bucket,
    argMinState(best_bid, (t, seq)) AS open,
    max(best_bid) AS high,
    min(best_bid) AS low,
    argMaxState(best_bid, (t, seq)) AS close,
    count() AS volume
FROM ticks
WHERE event = 'price_change'
GROUP BY asset_id, bucket;
