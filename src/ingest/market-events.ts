import type { MarketEventKind, MarketEventRow } from '../clickhouse/rows.js';
import { feeFields } from './fee-fields.js';
import { optionalNum, stringArray } from './wire-values.js';

/**
 * The market_events rows (clickhouse/012_market_events.sql) of a tick_size_change, best_bid_ask,
 * market_resolved or new_market event (docs/INGEST.md §1), one per asset it concerns, with seq 0 and
 * no receive time (the normalizer sets both); null when a field it needs is missing or mangled.
 * Fields the event does not carry stay absent.
 */
export function marketEventRows(e: Record<string, unknown>, t: number, raw: string): MarketEventRow[] | null {
  const market = typeof e.market === 'string' ? e.market : typeof e.condition_id === 'string' ? e.condition_id : '';
  const base = (asset_id: string, event: MarketEventKind): MarketEventRow => ({ asset_id, t, seq: 0, event, market, raw });
  switch (e.event_type) {
    case 'tick_size_change': {
      const asset = assetOf(e.asset_id);
      const next = optionalNum(e.new_tick_size);
      const previous = optionalNum(e.old_tick_size);
      if (asset === null || !(next! > 0) || Number.isNaN(previous)) return null;
      return [withNumbers(base(asset, 'tick_size_change'), { old_tick_size: previous, new_tick_size: next })];
    }
    case 'best_bid_ask': {
      const asset = assetOf(e.asset_id);
      const numbers = { best_bid: optionalNum(e.best_bid), best_ask: optionalNum(e.best_ask), spread: optionalNum(e.spread) };
      if (asset === null || Object.values(numbers).some(Number.isNaN)) return null;
      return [withNumbers(base(asset, 'best_bid_ask'), numbers)];
    }
    case 'market_resolved': {
      const winner = assetOf(e.winning_asset_id);
      const assets = stringArray(e.assets_ids) ?? (winner === null ? null : [winner]);
      if (assets === null || assets.length === 0 || (e.winning_outcome !== undefined && typeof e.winning_outcome !== 'string')) return null;
      return assets.map((asset) => ({
        ...base(asset, 'market_resolved'),
        winning_asset_id: winner ?? '',
        winning_outcome: (e.winning_outcome as string) ?? '',
      }));
    }
    case 'new_market':
      return newMarketRows(e, (asset) => base(asset, 'new_market'));
    default:
      return null;
  }
}

/** One row per token of a new_market, with its outcome, the market's opening tick, neg-risk and fees. */
function newMarketRows(e: Record<string, unknown>, base: (asset: string) => MarketEventRow): MarketEventRow[] | null {
  const tokens = stringArray(e.assets_ids) ?? stringArray(e.clob_token_ids);
  const outcomes = stringArray(e.outcomes);
  const tick = optionalNum(e.order_price_min_tick_size);
  const fees = feeFields({
    enabled: e.fees_enabled,
    takerBase: e.taker_base_fee,
    makerBase: e.maker_base_fee,
    schedule: e.fee_schedule,
    scheduleKeys: { rate: 'rate', exponent: 'exponent', takerOnly: 'taker_only', rebateRate: 'rebate_rate' },
  });
  if (!tokens || !outcomes || tokens.length !== outcomes.length || tokens.length === 0 || Number.isNaN(tick) || fees === null) return null;
  if (e.neg_risk !== undefined && typeof e.neg_risk !== 'boolean') return null;
  return tokens.map((asset, i) => {
    const row: MarketEventRow = { ...base(asset), outcome: outcomes[i] };
    if (tick !== undefined) row.new_tick_size = tick;
    if (typeof e.neg_risk === 'boolean') row.neg_risk = e.neg_risk;
    if (Object.keys(fees).length > 0) row.fees = fees;
    return row;
  });
}

function assetOf(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** Sets the numbers that are present. */
function withNumbers(
  row: MarketEventRow,
  numbers: Partial<Record<'old_tick_size' | 'new_tick_size' | 'best_bid' | 'best_ask' | 'spread', number | undefined>>,
) {
  for (const [k, v] of Object.entries(numbers)) if (v !== undefined) (row as unknown as Record<string, number>)[k] = v;
  return row;
}
