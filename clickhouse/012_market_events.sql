-- The market channel's events that are not ticks (docs/INGEST.md §2, §5): tick_size_change,
-- best_bid_ask, market_resolved and new_market, one row per asset the event concerns (new_market and
-- market_resolved name several). `ticks` keeps the contract's three event types; the instrument at an
-- instant (/v1/instruments, the CLOB tick size) and the replay read these rows.
-- ORDER BY (asset_id, t, seq): like ticks, so one asset's events are one key range in arrival order;
-- seq comes from the same arrival counter as the ticks of the same ingest, so the replay interleaves
-- the two tables exactly as the frames arrived.
CREATE TABLE IF NOT EXISTS market_events
(
    asset_id         String,
    t                DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    seq              UInt64 CODEC(Delta, ZSTD(1)),
    local_t          DateTime64(6, 'UTC') DEFAULT t CODEC(Delta, ZSTD(1)),
    event            Enum8('tick_size_change' = 1, 'best_bid_ask' = 2, 'market_resolved' = 3, 'new_market' = 4),
    market           LowCardinality(String),
    -- tick_size_change: the tick before and after; new_market: the tick the market opens with (new_tick_size).
    old_tick_size    Nullable(Float64),
    new_tick_size    Nullable(Float64),
    -- best_bid_ask: the top of the book and its spread as the exchange stated them.
    best_bid         Nullable(Float64),
    best_ask         Nullable(Float64),
    spread           Nullable(Float64),
    -- market_resolved: the winning token and its outcome label (the same on every asset's row).
    winning_asset_id String DEFAULT '',
    winning_outcome  String DEFAULT '',
    -- new_market: this asset's outcome label, neg-risk when stated, and the fee schedule; NULL = not stated.
    outcome          String DEFAULT '',
    neg_risk         Nullable(Bool),
    fees_enabled     Nullable(Bool),
    taker_base_fee   Nullable(Float64),
    maker_base_fee   Nullable(Float64),
    fee_rate         Nullable(Float64),
    fee_exponent     Nullable(Float64),
    fee_taker_only   Nullable(Bool),
    fee_rebate_rate  Nullable(Float64),
    -- The event object's JSON as received (or as the array it came in held it): the replay sends it
    -- back byte for byte, and fields without a column (question, tags, description) stay readable.
    raw              String CODEC(ZSTD(3)),
    -- best_bid_ask events can be as frequent as price changes; the instrument reads skip granules
    -- holding only them.
    INDEX event_set event TYPE set(4) GRANULARITY 1
)
ENGINE = MergeTree
ORDER BY (asset_id, t, seq)
-- Retried or re-replayed batches are dropped as in ticks.
SETTINGS non_replicated_deduplication_window = 100000;
