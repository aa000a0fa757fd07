/**
 * Polymarket's taker fee (docs/TIME-MACHINE.md §5): `fee = size × rate × (p × (1 − p))^exponent`, paid by
 * the taker only, from the market's fee schedule (`feeSchedule` in Gamma, `fee_schedule` in new_market:
 * `rate` is the effective rate, e.g. 0.04, not `fee_rate_bps` or `takerBaseFee`), floored to 5 decimals
 * (0.00001 USDC, the smallest amount charged). Source: docs.polymarket.com/trading/fees as NautilusTrader's
 * Polymarket adapter implements it (`compute_commission`); every schedule seen so far has exponent 1,
 * i.e. `size × rate × p × (1 − p)`.
 */
export interface FeeSchedule {
  rate: number;
  exponent: number;
}

/** The taker fee in USDC of a fill of `size` shares at `price` (0–1); 0 at a price of 0 or 1. */
export function takerFee(size: number, price: number, schedule: FeeSchedule): number {
  const fee = size * schedule.rate * (price * (1 - price)) ** schedule.exponent;
  // Floored to 5 decimals; toPrecision first so a product like 2.1999999999 that means 2.2 is not cut to 2.19999.
  return Math.floor(Number((fee * 1e5).toPrecision(12))) / 1e5;
}
