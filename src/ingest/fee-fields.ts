import type { FeeFields } from '../clickhouse/rows.js';
import { isRecord, optionalNum } from './wire-values.js';

/**
 * Fee fields as a market states them: Gamma (`feesEnabled`, `takerBaseFee`, `makerBaseFee`, `feeSchedule`
 * with numbers) and new_market (`fees_enabled`, `taker_base_fee`, `fee_schedule` with numbers as strings)
 * name them differently, so the caller names them. null when one is present but not a boolean or number.
 */
export function feeFields(named: {
  enabled: unknown;
  takerBase: unknown;
  makerBase: unknown;
  schedule: unknown;
  scheduleKeys: { rate: string; exponent: string; takerOnly: string; rebateRate: string };
}): FeeFields | null {
  const fees: FeeFields = {};
  const schedule = named.schedule === undefined || named.schedule === null ? {} : named.schedule;
  if (!isRecord(schedule)) return null;
  const numbers: [keyof FeeFields, unknown][] = [
    ['taker_base_fee', named.takerBase],
    ['maker_base_fee', named.makerBase],
    ['fee_rate', schedule[named.scheduleKeys.rate]],
    ['fee_exponent', schedule[named.scheduleKeys.exponent]],
    ['fee_rebate_rate', schedule[named.scheduleKeys.rebateRate]],
  ];
  for (const [field, value] of numbers) {
    const n = optionalNum(value);
    if (Number.isNaN(n)) return null;
    if (n !== undefined) (fees as Record<string, number>)[field] = n;
  }
  const flags: [keyof FeeFields, unknown][] = [
    ['fees_enabled', named.enabled],
    ['fee_taker_only', schedule[named.scheduleKeys.takerOnly]],
  ];
  for (const [field, value] of flags) {
    if (value === undefined || value === null) continue;
    if (typeof value !== 'boolean') return null;
    (fees as Record<string, boolean>)[field] = value;
  }
  return fees;
}
