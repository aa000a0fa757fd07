-- Fee metadata Gamma states per market (docs/API.md §4 /v1/instruments): feesEnabled, takerBaseFee,
-- makerBaseFee and feeSchedule {rate, exponent, takerOnly, rebateRate}. NULL = the metadata did not say;
-- the stored history (new_market) wins over these where it has them.
ALTER TABLE markets ADD COLUMN IF NOT EXISTS fees_enabled Nullable(Bool);
ALTER TABLE markets ADD COLUMN IF NOT EXISTS taker_base_fee Nullable(Float64);
ALTER TABLE markets ADD COLUMN IF NOT EXISTS maker_base_fee Nullable(Float64);
ALTER TABLE markets ADD COLUMN IF NOT EXISTS fee_rate Nullable(Float64);
ALTER TABLE markets ADD COLUMN IF NOT EXISTS fee_exponent Nullable(Float64);
ALTER TABLE markets ADD COLUMN IF NOT EXISTS fee_taker_only Nullable(Bool);
ALTER TABLE markets ADD COLUMN IF NOT EXISTS fee_rebate_rate Nullable(Float64);
