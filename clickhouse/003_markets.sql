-- Market metadata from Gamma and `new_market` events, one row per outcome token.
-- ReplacingMergeTree(updated_at): re-upserting a token keeps only its newest row after merges;
-- readers use FINAL (the table is small) so they never see two versions.
-- ORDER BY asset_id: lookups and joins are by token.
CREATE TABLE IF NOT EXISTS markets
(
    asset_id   String,
    market     String,
    outcome    String,
    question   String,
    slug       String,
    updated_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY asset_id;
