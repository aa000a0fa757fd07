import { z } from 'zod';
import { RESOLUTIONS } from '../../queries/ohlcv.js';
import { CandleSchema, candlesInWindow } from '../../use-cases/candles.js';
import { assertOrdered, assetId, instant, intIn, oneOf, toMs } from '../inputs.js';
import { defineTool } from '../tool.js';

/** At most this many candles per answer (~50 KB); `/v1/ohlcv` allows 1,000. */
export const MAX_CANDLES = 500;

export const getCandles = defineTool({
  name: 'get_candles',
  title: 'OHLCV candles',
  description:
    'Candles of one outcome token, as GET /v1/ohlcv answers them: open/high/low/close of best_bid over price_change ticks, volume = the number of those ' +
    'ticks; buckets aligned to UTC, timestamp = bucket start (Unix ms), empty buckets omitted, ascending. Buckets with start in [floor(start), end] ' +
    `(both inclusive): with start, the first \`limit\` from there; without, the last \`limit\` up to end (default now). Bounded: at most ${MAX_CANDLES} ` +
    'candles (~50 KB); page with start.',
  input: z.strictObject({
    asset_id: assetId(),
    resolution: oneOf(RESOLUTIONS, 'Bucket length (default 1h)').optional(),
    start: instant('First bucket: Unix ms or ISO 8601, floored to the resolution').optional(),
    end: instant('Last bucket start at or before this: Unix ms or ISO 8601 (default now)').optional(),
    limit: intIn(1, MAX_CANDLES, 'Candles at most (default 100)').optional(),
  }),
  output: z.object({ candles: z.array(CandleSchema), count: z.number().int(), resolution: z.enum(RESOLUTIONS) }),
  async run(args, deps, call) {
    const start = toMs('start', args.start);
    const end = toMs('end', args.end);
    assertOrdered(start, end);
    const resolution = args.resolution ?? '1h';
    const candles = await candlesInWindow(deps, call.window, { asset_id: args.asset_id, resolution, start, end, limit: args.limit ?? 100 }, call.signal);
    return { candles, count: candles.length, resolution };
  },
});
