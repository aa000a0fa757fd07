import type { MarketRow } from '../clickhouse/rows.js';

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
    const updated = typeof m.updatedAt === 'string' ? Date.parse(m.updatedAt) : NaN;
    const updatedAt = Number.isFinite(updated) ? updated : fallbackUpdatedAt;
    tokens.forEach((asset_id, i) => {
      rows.push({
        asset_id,
        market,
        outcome: outcomes[i],
        question: text(m.question),
        slug: text(m.slug),
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

function stringArray(value: unknown): string[] | null {
  let v = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return null;
    }
  }
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && x !== '')) return null;
  return v as string[];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
