import type { MarketRow } from '../clickhouse/rows.js';
import { isoMillis } from '../time.js';
import { feeFields } from './fee-fields.js';
import { isRecord, stringArray } from './wire-values.js';

/**
 * A market object of Gamma's `/markets` answer (only the fields the ingester reads). `outcomes` and
 * `clobTokenIds` arrive as JSON-encoded strings holding arrays, in the same order; plain arrays are
 * accepted too.
 */
export interface GammaMarket {
  conditionId?: string;
  question?: string;
  slug?: string;
  outcomes?: string | string[];
  clobTokenIds?: string | string[];
  active?: boolean;
  closed?: boolean;
  endDate?: string;
  updatedAt?: string;
  orderMinSize?: number;
  orderPriceMinTickSize?: number;
  negRisk?: boolean;
  feesEnabled?: boolean;
  takerBaseFee?: number;
  makerBaseFee?: number;
  feeSchedule?: { rate?: number; exponent?: number; takerOnly?: boolean; rebateRate?: number };
  [field: string]: unknown;
}

/**
 * One MarketRow per outcome token of each Gamma market. `updated_at` is Gamma's `updatedAt` (not the
 * wall clock) so replaying the same metadata twice writes identical rows; without it,
 * `fallbackUpdatedAt`. Markets whose token list and outcome list are unusable are counted in
 * `invalid` and skipped.
 */
export function parseGammaMarkets(markets: readonly unknown[], fallbackUpdatedAt = 0): { rows: MarketRow[]; invalid: number } {
  const rows: MarketRow[] = [];
  let invalid = 0;
  for (const m of markets) {
    if (!isRecord(m)) {
      invalid++;
      continue;
    }
    const tokens = stringArray(m.clobTokenIds);
    const outcomes = stringArray(m.outcomes);
    const market = typeof m.conditionId === 'string' ? m.conditionId : '';
    if (!tokens || !outcomes || tokens.length !== outcomes.length || !market) {
      invalid++;
      continue;
    }
    const updatedAt = (typeof m.updatedAt === 'string' ? isoMillis(m.updatedAt) : undefined) ?? fallbackUpdatedAt;
    const rules = tradingRules(m);
    tokens.forEach((asset_id, i) => {
      rows.push({
        asset_id,
        market,
        outcome: outcomes[i],
        question: text(m.question),
        slug: text(m.slug),
        ...rules,
        updated_at: updatedAt,
      });
    });
  }
  return { rows, invalid };
}

/**
 * The MarketRows a `new_market` event announces (`assets_ids` or `clob_token_ids`, paired with
 * `outcomes`), versioned by the event's timestamp; null when the event lacks what a row needs.
 */
export function parseNewMarket(event: Record<string, unknown>, t: number): MarketRow[] | null {
  const tokens = stringArray(event.assets_ids) ?? stringArray(event.clob_token_ids);
  const outcomes = stringArray(event.outcomes);
  const market = typeof event.market === 'string' ? event.market : typeof event.condition_id === 'string' ? event.condition_id : '';
  if (!tokens || !outcomes || tokens.length !== outcomes.length || tokens.length === 0 || !market) return null;
  return tokens.map((asset_id, i) => ({
    asset_id,
    market,
    outcome: outcomes[i],
    question: text(event.question),
    slug: text(event.slug),
    updated_at: t,
  }));
}

type Rules = Pick<MarketRow, 'min_order_size' | 'tick_size' | 'neg_risk' | 'fees'>;

/**
 * The trading rules a Gamma market states (the CLOB read API and /v1/instruments report them); fields
 * it lacks, or states in a form that is not a number or boolean, stay absent.
 */
function tradingRules(m: Record<string, unknown>): Rules {
  const rules: Rules = {};
  const minSize = positiveNumber(m.orderMinSize);
  const tick = positiveNumber(m.orderPriceMinTickSize);
  if (minSize !== undefined) rules.min_order_size = minSize;
  if (tick !== undefined) rules.tick_size = tick;
  if (typeof m.negRisk === 'boolean') rules.neg_risk = m.negRisk;
  const fees = feeFields({
    enabled: m.feesEnabled,
    takerBase: m.takerBaseFee,
    makerBase: m.makerBaseFee,
    schedule: m.feeSchedule,
    scheduleKeys: { rate: 'rate', exponent: 'exponent', takerOnly: 'takerOnly', rebateRate: 'rebateRate' },
  });
  if (fees && Object.keys(fees).length > 0) rules.fees = fees;
  return rules;
}

/** A number > 0, given as a JSON number or a numeric string. */
function positiveNumber(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
