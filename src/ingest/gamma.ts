import type { MarketRow, ProtocolRow, ProtocolVersion } from '../clickhouse/rows.js';
import { log } from '../log.js';
import { isoMillis } from '../time.js';
import { feeFields } from './fee-fields.js';
import { isRecord, stringArray } from './wire-values.js';

/**
 * A market object of Gamma's `/markets` (and `/markets/keyset`) answer, only the fields the ingester
 * reads. `version` names the market's protocol (docs.polymarket.com, "Migrate to Polymarket V2"):
 * `"v2"` markets trade their outcomes under `positionIds` (an array of decimal strings), `"v1"` (CTF)
 * markets under `clobTokenIds` (a JSON-encoded string holding the array). `outcomes` is JSON-encoded
 * too, in the ids' order. A moneyline market (`outcome_type: "moneyline"`) is one instrument whose two
 * outcomes are the two sides `marketSides` names.
 */
export interface GammaMarket {
  conditionId?: string;
  question?: string;
  slug?: string;
  version?: string;
  outcomes?: string | string[];
  clobTokenIds?: string | string[];
  positionIds?: string | string[];
  outcome_type?: string;
  marketSides?: unknown[];
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

/** A Gamma market the parser could not take as it is, and why (logged by logGammaProblems). */
export interface GammaProblem {
  market: string;
  slug: string;
  /** `version-missing`: read as v1 (kept); every other kind: the market is skipped. */
  kind: 'version-missing' | 'version-unsupported' | 'ids-invalid' | 'outcomes-unmatched' | 'sides-unnamed' | 'not-an-object';
  version?: unknown;
}

export interface GammaParse {
  /** One row per outcome token of each market taken. */
  rows: MarketRow[];
  /** The protocol version of each of those tokens. */
  protocols: ProtocolRow[];
  /** Markets skipped (every problem but `version-missing` and `sides-unnamed`). */
  invalid: number;
  problems: GammaProblem[];
}

/**
 * Gamma markets as MarketRows (one per outcome token) and their protocol versions, choosing the id field
 * by `version` exactly as Polymarket's migration guide says, even when both fields are present: `"v2"`
 * → `positionIds`, `"v1"` → `clobTokenIds`; an unsupported version, ids that are missing or not decimal
 * strings, or outcomes that do not pair with the ids skip the market. A market with no `version` at all
 * is read as v1 (Gamma answers saved before 2026, when every market was a CTF market and none named a
 * version, so `--markets` files of that time keep their labels) and reported. A moneyline market's
 * outcome labels are its sides' names. `updated_at` is Gamma's `updatedAt` (not the wall clock) so
 * replaying the same metadata twice writes identical rows; without it, `fallbackUpdatedAt`.
 */
export function parseGammaMarkets(markets: readonly unknown[], fallbackUpdatedAt = 0): GammaParse {
  const out: GammaParse = { rows: [], protocols: [], invalid: 0, problems: [] };
  for (const m of markets) {
    if (!isRecord(m)) {
      out.invalid++;
      out.problems.push({ market: '', slug: '', kind: 'not-an-object' });
      continue;
    }
    const market = typeof m.conditionId === 'string' ? m.conditionId : '';
    const problem = (kind: GammaProblem['kind'], extra: Partial<GammaProblem> = {}) => out.problems.push({ market, slug: text(m.slug), kind, ...extra });
    const version = protocolOf(m.version);
    if (version === null) {
      out.invalid++;
      problem('version-unsupported', { version: m.version });
      continue;
    }
    if (m.version === undefined || m.version === null) problem('version-missing');
    const tokens = decimalIds(version === 'v2' ? m.positionIds : m.clobTokenIds);
    if (!tokens || !market) {
      out.invalid++;
      problem('ids-invalid');
      continue;
    }
    let outcomes = stringArray(m.outcomes);
    if (isMoneyline(m)) {
      const sides = sideLabels(m.marketSides);
      if (sides) outcomes = sides;
      else problem('sides-unnamed');
    }
    if (!outcomes || tokens.length !== outcomes.length) {
      out.invalid++;
      problem('outcomes-unmatched');
      continue;
    }
    const updatedAt = (typeof m.updatedAt === 'string' ? isoMillis(m.updatedAt) : undefined) ?? fallbackUpdatedAt;
    const rules = tradingRules(m);
    tokens.forEach((asset_id, i) => {
      out.rows.push({ asset_id, market, outcome: outcomes[i], question: text(m.question), slug: text(m.slug), ...rules, updated_at: updatedAt });
      out.protocols.push({ asset_id, market, protocol_version: version, updated_at: updatedAt });
    });
  }
  return out;
}

/** Problems logged one line each up to this many per call; the rest are counted in one line. */
const PROBLEM_LINES = 20;

const PROBLEM_TEXT: Record<GammaProblem['kind'], string> = {
  'version-missing': 'Gamma market without a version: read as a v1 (CTF) market, its outcome ids from clobTokenIds',
  'version-unsupported': 'Gamma market skipped: its version is neither "v1" nor "v2"',
  'ids-invalid': 'Gamma market skipped: its outcome ids (positionIds for v2, clobTokenIds for v1) are missing or not decimal strings',
  'outcomes-unmatched': 'Gamma market skipped: its outcomes do not pair with its outcome ids',
  'sides-unnamed': "Gamma moneyline market without two named sides: its outcomes keep Gamma's labels",
  'not-an-object': 'Gamma market skipped: not a JSON object',
};

/** One warning per problem (the first PROBLEM_LINES of them), then one line counting the rest by kind. */
export function logGammaProblems(problems: readonly GammaProblem[], source: string): void {
  for (const p of problems.slice(0, PROBLEM_LINES)) {
    log.warn(PROBLEM_TEXT[p.kind], { source, market: p.market, slug: p.slug, ...(p.kind === 'version-unsupported' ? { version: p.version ?? null } : {}) });
  }
  if (problems.length > PROBLEM_LINES) {
    const byKind: Record<string, number> = {};
    for (const p of problems.slice(PROBLEM_LINES)) byKind[p.kind] = (byKind[p.kind] ?? 0) + 1;
    log.warn('more Gamma markets with problems (counted, not logged one by one)', { source, ...byKind });
  }
}

/** `"v1"` / `"v2"`; a missing version counts as v1 (see parseGammaMarkets); null for any other value. */
function protocolOf(version: unknown): ProtocolVersion | null {
  if (version === undefined || version === null) return 'v1';
  return version === 'v1' || version === 'v2' ? version : null;
}

/** Outcome ids as Polymarket's guide requires them: a non-empty list of decimal strings (an array, or JSON text of one). */
function decimalIds(value: unknown): string[] | null {
  const ids = stringArray(value);
  return ids && ids.length > 0 && ids.every((id) => /^\d+$/.test(id)) ? ids : null;
}

function isMoneyline(m: Record<string, unknown>): boolean {
  return m.outcome_type === 'moneyline' || m.outcomeType === 'moneyline';
}

/**
 * The labels of a moneyline market's two sides, in outcome order: the long side first, the short one
 * second when the sides say which is which (`long`), else as listed. A side is named by its
 * `description`, else its team's `name`, else its `identifier` (the MarketSide fields of Polymarket's
 * published schema). null unless exactly two sides each have a name.
 */
function sideLabels(value: unknown): string[] | null {
  if (!Array.isArray(value) || value.length !== 2 || !value.every(isRecord)) return null;
  const sides = value as Record<string, unknown>[];
  const ordered = sides[0].long === false && sides[1].long === true ? [sides[1], sides[0]] : sides;
  const labels = ordered.map((s) => {
    const team = isRecord(s.team) ? s.team.name : undefined;
    return [s.description, team, s.identifier].find((v): v is string => typeof v === 'string' && v.trim() !== '');
  });
  return labels.every((l) => l !== undefined) ? (labels as string[]) : null;
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
