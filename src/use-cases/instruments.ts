import { z } from '@hono/zod-openapi';
import type { Engine } from '../clickhouse/engine.js';
import { notFound } from '../http/errors.js';
import { type Instrument, instrumentAt } from '../instruments/instrument.js';
import { marketMetadata } from '../queries/clob.js';
import { listingHistoryAt, tradingHistoryAt } from '../queries/instruments.js';

/**
 * The instrument of a token at an instant (docs/TIME-MACHINE.md §5): its answer's schema and the one
 * read behind `/v1/instruments`, the CLOB surface's trading rules and the MCP `get_market`.
 */

const SOURCE = z.enum(['history', 'metadata', 'default']);

export const FeesSchema = z
  .object({
    enabled: z.boolean().nullable(),
    taker_base_fee: z.number().nullable().openapi({ description: 'Gamma takerBaseFee / new_market taker_base_fee (basis points)' }),
    maker_base_fee: z.number().nullable(),
    rate: z.number().nullable().openapi({ description: 'fee_schedule.rate: taker fee = size × rate × (p × (1 − p))^exponent (docs/TIME-MACHINE.md §5)' }),
    exponent: z.number().nullable(),
    taker_only: z.boolean().nullable(),
    rebate_rate: z.number().nullable().openapi({ description: 'Share of taker fees rebated to makers' }),
  })
  .openapi({ description: 'What is known of the fee schedule; null = not stated anywhere' });

/** The instrument fields (also on /v1/markets entries, as of now). */
export const INSTRUMENT_FIELDS = {
  outcome: z.string(),
  tick_size: z.number(),
  min_order_size: z.number(),
  neg_risk: z.boolean(),
  fees: FeesSchema,
  status: z.enum(['open', 'resolved']),
  winner: z.object({ asset_id: z.string(), outcome: z.string() }).nullable().openapi({ description: 'From market_resolved; null while open' }),
  resolved_at: z.number().int().nullable().openapi({ description: 'Unix ms of the stored market_resolved; null while open' }),
  source: z
    .object({
      market: SOURCE,
      outcome: SOURCE,
      question: SOURCE,
      tick_size: SOURCE,
      min_order_size: SOURCE,
      neg_risk: SOURCE,
      fees: SOURCE,
      status: SOURCE,
      protocol_version: SOURCE,
    })
    .openapi({
      description: 'Where each field comes from: stored history as of the instant, market metadata (Gamma, today’s), or Polymarket’s default',
    }),
  protocol_version: z
    .enum(['v1', 'v2'])
    .nullable()
    .openapi({
      description:
        'The market’s Polymarket protocol, Gamma’s `version`: `v1` (a CTF outcome token, Gamma’s clobTokenIds) or `v2` (a Protocol V2 position, Gamma’s ' +
        'positionIds); null when no metadata states it',
    }),
};

export const InstrumentSchema = z
  .object({
    asset_id: z.string(),
    market: z.string(),
    question: z.string(),
    ...INSTRUMENT_FIELDS,
    as_of: z.number().int().openapi({ description: 'The instant answered for, Unix ms (a later timestamp than now + 1 minute answers as of then)' }),
  })
  .openapi('Instrument');

/**
 * The instrument of `assetId` at `at` (Unix ms, already clamped to now + the clock lead), or a 404 when
 * neither history nor metadata knows it: the one read behind `/v1/instruments` and the MCP `get_market`.
 */
export async function readInstrument(engine: Engine, assetId: string, at: number, signal?: AbortSignal): Promise<Instrument> {
  const [trading, listing, meta] = await Promise.all([
    tradingHistoryAt(engine, assetId, at, signal),
    listingHistoryAt(engine, assetId, at, signal),
    marketMetadata(engine, [assetId], signal),
  ]);
  const instrument = instrumentAt(assetId, at, trading, listing, meta.get(assetId));
  if (!instrument) throw notFound(`No market data or metadata for asset ${assetId}.`);
  return instrument;
}
