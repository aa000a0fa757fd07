import type { FeeFields, ProtocolVersion } from '../clickhouse/rows.js';
import { POLYMARKET_DEFAULT_RULES, type TradingRules } from '../clob/book-summary.js';
import type { ListingHistory, TradingHistory } from './history.js';

/**
 * An instrument at an instant (docs/TIME-MACHINE.md §5, GET /v1/instruments): each field from the
 * stored history as of the instant where it has one, else from the market metadata (Gamma), else
 * Polymarket's default, with `source` saying which.
 */
export type Source = 'history' | 'metadata' | 'default';

/** What the `markets` metadata table says of a token; null = not stated. */
export interface MarketMetadata {
  market: string;
  outcome: string;
  question: string;
  min_order_size: number | null;
  tick_size: number | null;
  neg_risk: boolean | null;
  fees: FeeFields;
  /** Gamma's `version` of the token's market (market_protocols). */
  protocol_version: ProtocolVersion | null;
}

export interface Fees {
  enabled: boolean | null;
  taker_base_fee: number | null;
  maker_base_fee: number | null;
  rate: number | null;
  exponent: number | null;
  taker_only: boolean | null;
  rebate_rate: number | null;
}

export interface Instrument {
  asset_id: string;
  market: string;
  outcome: string;
  question: string;
  tick_size: number;
  min_order_size: number;
  neg_risk: boolean;
  fees: Fees;
  /** The market's protocol: `v1` (CTF outcome token) or `v2` (Protocol V2 position); null when no metadata states it. */
  protocol_version: ProtocolVersion | null;
  status: 'open' | 'resolved';
  winner: { asset_id: string; outcome: string } | null;
  resolved_at: number | null;
  as_of: number;
  source: Record<'market' | 'outcome' | 'question' | 'tick_size' | 'min_order_size' | 'neg_risk' | 'fees' | 'protocol_version' | 'status', Source>;
}

const POLYMARKET_DEFAULTS = POLYMARKET_DEFAULT_RULES;

/**
 * The rules Polymarket's CLOB reports at an instant (`/tick-size`, `/neg-risk`, `/book`): the tick size
 * and neg-risk flag from history as of the instant, else metadata, else Polymarket's defaults; the
 * minimum order size from metadata (no market-channel event states it).
 */
export function tradingRulesAt(trading: TradingHistory, meta: MarketMetadata | undefined): TradingRules {
  return {
    min_order_size: meta?.min_order_size ?? POLYMARKET_DEFAULTS.min_order_size,
    tick_size: trading.tickSize?.value ?? meta?.tick_size ?? POLYMARKET_DEFAULTS.tick_size,
    neg_risk: trading.negRisk?.value ?? meta?.neg_risk ?? POLYMARKET_DEFAULTS.neg_risk,
  };
}

const FEE_MEMBERS: [keyof Fees, keyof FeeFields][] = [
  ['enabled', 'fees_enabled'],
  ['taker_base_fee', 'taker_base_fee'],
  ['maker_base_fee', 'maker_base_fee'],
  ['rate', 'fee_rate'],
  ['exponent', 'fee_exponent'],
  ['taker_only', 'fee_taker_only'],
  ['rebate_rate', 'fee_rebate_rate'],
];

/** The first stated value of the list, with its source; `fallback` (source default) when none is. */
function pick<T>(fallback: T, ...stated: [T | null | undefined, Source][]): [T, Source] {
  for (const [value, source] of stated) if (value !== null && value !== undefined && value !== '') return [value, source];
  return [fallback, 'default'];
}

/**
 * The instrument of `assetId` at `at` (Unix ms), or null when neither history nor metadata knows it.
 * Fee members the newest new_market left out come from metadata; `source.fees` is `history` when the
 * new_market stated any of them. A market is `resolved` from its stored market_resolved on; before it,
 * `open` (source `history` when a resolution is stored after the instant, `default` when none is).
 */
export function instrumentAt(
  assetId: string,
  at: number,
  trading: TradingHistory,
  listing: ListingHistory,
  meta: MarketMetadata | undefined,
): Instrument | null {
  const l = listing.listing;
  const known =
    meta !== undefined || listing.market !== '' || l !== null || listing.resolved !== null || trading.tickSize !== null || trading.lastTrade !== null;
  if (!known) return null;
  const [market, marketSource] = pick('', [l?.market, 'history'], [listing.market, 'history'], [meta?.market, 'metadata']);
  const [outcome, outcomeSource] = pick('', [l?.outcome, 'history'], [meta?.outcome, 'metadata']);
  const [question, questionSource] = pick('', [l?.question, 'history'], [meta?.question, 'metadata']);
  const [tick_size, tickSource] = pick<number>(POLYMARKET_DEFAULTS.tick_size, [trading.tickSize?.value, 'history'], [meta?.tick_size, 'metadata']);
  const [min_order_size, minSource] = pick<number>(POLYMARKET_DEFAULTS.min_order_size, [meta?.min_order_size, 'metadata']);
  const [neg_risk, negSource] = pick<boolean>(POLYMARKET_DEFAULTS.neg_risk, [trading.negRisk?.value, 'history'], [meta?.neg_risk, 'metadata']);
  // No market-channel event states it: Gamma's version, else unknown (every market was v1 before 2026, but a token with no metadata may be either).
  const [protocol_version, protocolSource] = pick<ProtocolVersion | null>(null, [meta?.protocol_version, 'metadata']);
  const fees = {} as Record<keyof Fees, number | boolean | null>;
  let feesSource: Source = 'default';
  for (const [member, field] of FEE_MEMBERS) {
    const [value, source] = pick<number | boolean | null>(null, [l?.fees[field], 'history'], [meta?.fees[field], 'metadata']);
    fees[member] = value;
    if (source === 'history' || (source === 'metadata' && feesSource === 'default')) feesSource = source;
  }
  const resolved = listing.resolved;
  return {
    asset_id: assetId,
    market,
    outcome,
    question,
    tick_size,
    min_order_size,
    neg_risk,
    fees: fees as unknown as Fees,
    status: resolved ? 'resolved' : 'open',
    winner: resolved ? { asset_id: resolved.winning_asset_id, outcome: resolved.winning_outcome } : null,
    resolved_at: resolved ? resolved.t : null,
    as_of: at,
    source: {
      market: marketSource,
      outcome: outcomeSource,
      question: questionSource,
      tick_size: tickSource,
      min_order_size: minSource,
      neg_risk: negSource,
      fees: feesSource,
      status: resolved || listing.resolvedLater ? 'history' : 'default',
      // Fields added after the first clients were written come last: an existing answer keeps its bytes up to them.
      protocol_version: protocolSource,
    },
    protocol_version,
  };
}
