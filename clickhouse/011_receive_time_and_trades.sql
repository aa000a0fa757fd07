-- Receive time, trade details and the book's own trading fields (docs/INGEST.md §4).
-- local_t: when the ingester received the frame that carried the row (µs, the recorder's stamp or a
-- frame file's line prefix). DEFAULT t: rows stored before this migration, and rows of frames whose
-- receive time is unknown, read local_t = t (the exchange's time) without any rewrite of old parts.
-- Delta suits it as it suits t: receive times rise with t within an asset.
ALTER TABLE ticks ADD COLUMN IF NOT EXISTS local_t DateTime64(6, 'UTC') DEFAULT t CODEC(Delta, ZSTD(1));
-- A last_trade_price's fee rate in basis points and its on-chain transaction hash, as Polymarket sent
-- them; NULL / '' on every other event and on trades that did not carry them.
ALTER TABLE ticks ADD COLUMN IF NOT EXISTS fee_rate_bps Nullable(UInt16);
ALTER TABLE ticks ADD COLUMN IF NOT EXISTS tx_hash String DEFAULT '' CODEC(ZSTD(1));

ALTER TABLE book_snapshots ADD COLUMN IF NOT EXISTS local_t DateTime64(6, 'UTC') DEFAULT t CODEC(Delta, ZSTD(1));
-- What an exchange `book` states besides its levels: the tick size in force and the last trade price.
-- NULL on checkpoints (the ingester's own books) and on books that did not carry them.
ALTER TABLE book_snapshots ADD COLUMN IF NOT EXISTS tick_size Nullable(Float64);
ALTER TABLE book_snapshots ADD COLUMN IF NOT EXISTS last_trade_price Nullable(Float64);

-- book_events copies rows of both tables (007): it carries their receive time too, so a dataset built
-- from it (book snapshots, Tardis-style files) can give each row its local timestamp.
ALTER TABLE book_events ADD COLUMN IF NOT EXISTS local_t DateTime64(6, 'UTC') DEFAULT t CODEC(Delta, ZSTD(1));

-- The views that fill book_events, again with local_t. Migrations run before any ingest starts, so no
-- insert happens between a DROP and its CREATE; a re-run of a migration cut short drops and creates
-- the same views again.
DROP VIEW IF EXISTS book_events_changes_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS book_events_changes_mv TO book_events AS
SELECT asset_id, t, seq, 'price_change' AS kind, market, price, size, book_side,
       CAST([], 'Array(Tuple(price Float64, size Float64))') AS bids, CAST([], 'Array(Tuple(price Float64, size Float64))') AS asks, local_t
FROM ticks
WHERE event = 'price_change';

DROP VIEW IF EXISTS book_events_snapshots_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS book_events_snapshots_mv TO book_events AS
SELECT asset_id, t, seq, if(is_checkpoint = 1, 'checkpoint', 'book') AS kind, market, 0 AS price, 0 AS size, '' AS book_side, bids, asks, local_t
FROM book_snapshots;
