-- The candle rollups (004, 006, 041) with open and close kept as plain numbers instead of argMin/argMax
-- states. Each is one UInt256: the tick's t (ms) in bits 128-191, its seq in bits 64-127 and its best_bid's
-- Float64 bits in 0-63, so min() is the first tick by (t, seq) and max() the last, exactly as the argMin/
-- argMax states by (t, seq) chose them (every t ≥ 0; (t, seq) is a tick's unique key, so the price bits
-- never decide), and the price is read back bit for bit (reinterpretAsFloat64 of the low 64 bits).
-- Why: a generic argMin state keyed by a tuple is serialized value by value; on an import of a pmxt hour
-- (30 M ticks) writing and merging those states cost more engine time than ticks itself, and each insert
-- block's states held ~200 MB. A SimpleAggregateFunction over a fixed-width number is written as a column.
-- The rollups are rebuilt from ticks, which they are derived from (the views below read nothing else).
-- Migrations run before any ingest starts, so no insert happens between a DROP and its CREATE; a re-run of
-- a migration cut short drops what it made and builds it again.
DROP VIEW IF EXISTS candles_1m_mv;

DROP VIEW IF EXISTS candles_1h_mv;

DROP TABLE IF EXISTS candles_1m;

DROP TABLE IF EXISTS candles_1h;

-- ORDER BY (asset_id, bucket): a candle request is one key range of one asset.
CREATE TABLE IF NOT EXISTS candles_1m
(
    asset_id String,
    bucket   DateTime('UTC'),
    open     SimpleAggregateFunction(min, UInt256),
    high     SimpleAggregateFunction(max, Float64),
    low      SimpleAggregateFunction(min, Float64),
    close    SimpleAggregateFunction(max, UInt256),
    volume   SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(bucket)
ORDER BY (asset_id, bucket)
-- A deduplicated insert into ticks must also be dropped here, or a retried batch would count twice.
SETTINGS non_replicated_deduplication_window = 100000;

CREATE MATERIALIZED VIEW IF NOT EXISTS candles_1m_mv TO candles_1m AS
SELECT asset_id, toStartOfMinute(t) AS bucket, min(key) AS open, max(best_bid) AS high, min(best_bid) AS low, max(key) AS close, count() AS volume
FROM
(
    SELECT asset_id, t, best_bid,
        bitOr(bitOr(bitShiftLeft(toUInt256(toUnixTimestamp64Milli(t)), 128), bitShiftLeft(toUInt256(seq), 64)), toUInt256(reinterpretAsUInt64(best_bid))) AS key
    FROM ticks
    WHERE event = 'price_change'
)
GROUP BY asset_id, bucket;

-- One-hour candles, the same columns: /v1/ohlcv at 1h, 4h and 1d reads these.
CREATE TABLE IF NOT EXISTS candles_1h
(
    asset_id String,
    bucket   DateTime('UTC'),
    open     SimpleAggregateFunction(min, UInt256),
    high     SimpleAggregateFunction(max, Float64),
    low      SimpleAggregateFunction(min, Float64),
    close    SimpleAggregateFunction(max, UInt256),
    volume   SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYear(bucket)
ORDER BY (asset_id, bucket)
SETTINGS non_replicated_deduplication_window = 100000;

CREATE MATERIALIZED VIEW IF NOT EXISTS candles_1h_mv TO candles_1h AS
SELECT asset_id, toStartOfHour(t) AS bucket, min(key) AS open, max(best_bid) AS high, min(best_bid) AS low, max(key) AS close, count() AS volume
FROM
(
    SELECT asset_id, t, best_bid,
        bitOr(bitOr(bitShiftLeft(toUInt256(toUnixTimestamp64Milli(t)), 128), bitShiftLeft(toUInt256(seq), 64)), toUInt256(reinterpretAsUInt64(best_bid))) AS key
    FROM ticks
    WHERE event = 'price_change'
)
GROUP BY asset_id, bucket;

-- The ticks stored before this migration (a re-run starts over from the DROPs above). On a large
-- ClickHouse server, expect this to read all of ticks once.
INSERT INTO candles_1m
SELECT asset_id, toStartOfMinute(t) AS bucket, min(key), max(best_bid), min(best_bid), max(key), count()
FROM
(
    SELECT asset_id, t, best_bid,
        bitOr(bitOr(bitShiftLeft(toUInt256(toUnixTimestamp64Milli(t)), 128), bitShiftLeft(toUInt256(seq), 64)), toUInt256(reinterpretAsUInt64(best_bid))) AS key
    FROM ticks
    WHERE event = 'price_change'
)
GROUP BY asset_id, bucket;

INSERT INTO candles_1h
SELECT asset_id, toStartOfHour(t) AS bucket, min(key), max(best_bid), min(best_bid), max(key), count()
FROM
(
    SELECT asset_id, t, best_bid,
        bitOr(bitOr(bitShiftLeft(toUInt256(toUnixTimestamp64Milli(t)), 128), bitShiftLeft(toUInt256(seq), 64)), toUInt256(reinterpretAsUInt64(best_bid))) AS key
    FROM ticks
    WHERE event = 'price_change'
)
GROUP BY asset_id, bucket;
