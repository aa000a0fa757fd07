import { z } from '@hono/zod-openapi';
import { SEMANTICS } from '../http/data-semantics.js';
import { INSTRUMENT_FIELDS } from './instruments.js';

/** A `/v1/markets` entry (docs/API.md §4), also what the MCP `search_markets` answers. */
const dayCount = () => z.number().int().optional();

export const MarketEntrySchema = z
  .object({
    market: z.string(),
    asset_id: z.string(),
    side: z.string().openapi({ description: SEMANTICS.side, example: 'YES' }),
    first_seen: z.string().openapi({ description: SEMANTICS.zones, example: '2026-06-01 00:00:00.000' }),
    last_seen: z.string().openapi({ description: 'Time of the newest tick; UTC text as first_seen' }),
    total_ticks: z.number().int(),
    question: z.string().optional(),
    slug: z.string().optional(),
    coverage: z.object({ available: dayCount(), degraded: dayCount(), missing: dayCount(), unknown: dayCount() }).openapi({
      description:
        'How many of the entry’s last 7 UTC days (the day of last_seen and the 6 before) had each condition of /v1/coverage; absent conditions had none',
      example: { available: 6, degraded: 1 },
    }),
    // The instrument as of now, as GET /v1/instruments gives it without a timestamp (additive, docs/API.md §4).
    ...INSTRUMENT_FIELDS,
  })
  .openapi('MarketEntry');
