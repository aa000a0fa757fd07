-- The protocol version Gamma states for each outcome token's market (docs/INGEST.md §1): "v1" (CTF
-- outcome tokens, Gamma's clobTokenIds) or "v2" (Protocol V2 positions, Gamma's positionIds). Kept
-- apart from `markets` so the rows Gamma metadata always wrote there stay byte for byte what they were.
-- ReplacingMergeTree(updated_at) like `markets`: the newest row per token wins; readers use FINAL.
CREATE TABLE IF NOT EXISTS market_protocols
(
    asset_id         String,
    market           String,
    protocol_version LowCardinality(String),
    updated_at       DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY asset_id;
