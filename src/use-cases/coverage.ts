import { z } from '@hono/zod-openapi';
import { DAY_CONDITIONS } from '../coverage/days.js';

/** What `/v1/coverage` answers (docs/TIME-MACHINE.md §4), also the MCP `get_coverage`. */
const GAP_REASONS = ['not_recording', 'disconnected', 'not_subscribed', 'source_missing', 'unknown'] as const;
const Interval = { from: z.number().int(), to: z.number().int() };

export const CoverageSchema = z
  .object({
    asset_id: z.string(),
    start: z.number().int(),
    end: z.number().int(),
    captured: z
      .array(z.object(Interval))
      .openapi({ description: 'Merged intervals (from ≤ t < to) during which a live recorder socket was subscribed to the asset' }),
    gaps: z
      .array(z.object({ ...Interval, reason: z.enum(GAP_REASONS) }))
      .openapi({ description: 'The rest of [start, min(end, now)), by reason; `unknown`: no capture record (data from other files)' }),
    reconnects: z.array(z.object({ t: z.number().int(), resynced: z.boolean().openapi({ description: 'A fresh exchange book followed the reconnect' }) })),
    books: z.object({ exchange: z.number().int(), verified: z.number().int(), drifted: z.number().int() }).openapi({
      description: 'Exchange books with start ≤ t ≤ end; the first book of an ingest run has nothing to be checked against and is neither verified nor drifted',
    }),
    drift: z.array(z.object({ t: z.number().int(), levels_differing: z.number().int() })).openapi({ description: 'The first 100 drifted books of the range' }),
    days: z
      .array(
        z.object({ date: z.string().openapi({ example: '2026-06-01' }), condition: z.enum(DAY_CONDITIONS), ticks: z.number().int(), gap_ms: z.number().int() }),
      )
      .openapi({ description: 'Every UTC day the range touches up to today, judged over the whole day up to now' }),
    imports: z
      .array(
        z.object({
          format: z.enum(['frames', 'recorder', 'pmxt', 'pmxt-kalshi', 'tardis']),
          unit: z
            .string()
            .openapi({ description: 'What the import ledger names it: a pmxt hour, a Tardis day and symbol, a frames file', example: 'pmxt:2026-09-01T12' }),
          from: z.number().int(),
          to: z.number().int(),
          events: z.number().int().openapi({ description: 'Events of the asset it stored (every run of it summed)' }),
          imported_at: z.number().int().openapi({ description: 'When its last run completed, Unix ms' }),
        }),
      )
      .openapi({
        description: 'The archive imports (npm run import) that stored events of the asset in [from, to) overlapping the range, by from; at most 100',
      }),
  })
  .openapi('Coverage');
