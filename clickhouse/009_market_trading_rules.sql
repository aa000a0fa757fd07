-- What Polymarket's CLOB read API reports per token besides the book (docs/TIME-MACHINE.md §2): the
-- minimum order size, the tick size and whether the market uses the neg-risk exchange, from Gamma's
-- orderMinSize, orderPriceMinTickSize and negRisk. NULL = the metadata did not say; the
-- Polymarket-compatible endpoints then answer Polymarket's defaults.
ALTER TABLE markets ADD COLUMN IF NOT EXISTS min_order_size Nullable(Float64);
ALTER TABLE markets ADD COLUMN IF NOT EXISTS tick_size Nullable(Float64);
ALTER TABLE markets ADD COLUMN IF NOT EXISTS neg_risk Nullable(Bool);
