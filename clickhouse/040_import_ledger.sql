-- What `npm run import` stored (docs/INGEST.md §6.5): one row when an import of a unit (a frames file, a
-- pmxt hour, a Tardis day and symbol) starts and one when it is complete, with the source's size, digest
-- and rows. The importer reads it to add nothing twice, whatever sequence of runs: the same file again, a
-- whole file after an `--assets` subset of it, a file that grew since. `npm run import -- --status` lists
-- it; /v1/coverage counts it per asset (import_ledger_assets).
-- ORDER BY (unit, at): the importer reads one unit's entries at a time.
CREATE TABLE IF NOT EXISTS import_ledger
(
    run          String,
    unit         String,
    format       LowCardinality(String),
    files        Array(String),
    bytes        UInt64,
    -- sha-256 of the file's first and last 64 KiB and its size: tells versions of a file apart.
    digest       String,
    -- Rows of the source the entry read, and the sum of their hashes (events.ts): a later version of the
    -- file that begins with the same rows is a grown one.
    source_rows  UInt64,
    rows_hash    UInt64,
    -- The `--assets` the entry was limited to; [] = every asset.
    assets       Array(String),
    span_from    DateTime64(3, 'UTC'),
    span_to      DateTime64(3, 'UTC'),
    events       UInt64,
    stored_rows  UInt64,
    status       Enum8('started' = 1, 'complete' = 2),
    at           DateTime64(3, 'UTC')
)
ENGINE = MergeTree
ORDER BY (unit, at);

-- The events each complete import stored per asset: what /v1/coverage counts for an asset's range.
-- ORDER BY (asset_id, span_from): one asset's imports are one key range, in time order.
CREATE TABLE IF NOT EXISTS import_ledger_assets
(
    asset_id  String,
    span_from DateTime64(3, 'UTC'),
    span_to   DateTime64(3, 'UTC'),
    unit      String,
    format    LowCardinality(String),
    run       String,
    events    UInt64,
    at        DateTime64(3, 'UTC')
)
ENGINE = MergeTree
ORDER BY (asset_id, span_from);

-- Each asset's book as an imported unit left it (src/ingest/import/book-states.ts): the next hour (day)
-- of the archive, imported later, continues from it instead of starting over. One row per asset after
-- merges (the latest unit's); an import reads the rows whose as_of is where its unit begins.
CREATE TABLE IF NOT EXISTS import_book_states
(
    asset_id   String,
    as_of      DateTime64(3, 'UTC'),
    market     String,
    grounded   UInt8,
    changes    UInt32,
    snapshot_t DateTime64(3, 'UTC'),
    has_book   UInt8,
    bids       Array(Tuple(Float64, Float64)),
    asks       Array(Tuple(Float64, Float64))
)
ENGINE = ReplacingMergeTree(as_of)
ORDER BY asset_id;
