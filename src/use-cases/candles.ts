import { z } from '@hono/zod-openapi';
import { assertInWindow, type HistoryWindow } from '../auth/history-window.js';
import type { AppDeps } from '../deps.js';
import { SEMANTICS } from '../http/data-semantics.js';
import { type Candle, type CandleQuery, floorToResolution, newestCandleBefore, queryCandles, type Resolution } from '../queries/ohlcv.js';

export const CandleSchema = z
  .object({
    timestamp: z.number().int().openapi({ description: 'Bucket start, Unix ms (UTC-aligned)' }),
    open: z.number(),
    high: z.number(),
    low: z.number(),
    close: z.number(),
    volume: z.number().int().openapi({ description: SEMANTICS.volume }),
  })
  .openapi('Candle');

/**
 * The candles of a `/v1/ohlcv` query (defaults applied) as the caller's window allows: the route's
 * and the MCP `get_candles` tool's one selection (docs/API.md §4).
 */
export async function candlesInWindow(
  deps: Pick<AppDeps, 'engine' | 'clock'>,
  window: HistoryWindow,
  q: { asset_id: string; resolution: Resolution; start?: number; end?: number; limit: number },
  signal?: AbortSignal,
): Promise<Candle[]> {
  const { asset_id, resolution, limit } = q;
  if (q.start !== undefined) assertInWindow(window, q.start);
  const end = q.end ?? deps.clock.now();
  const to = floorToResolution(end, resolution);
  // With a start: the first `limit` buckets from it. Without: the last `limit` up to end, inside
  // the window (its midnight start is aligned to every resolution).
  const query: CandleQuery =
    q.start !== undefined
      ? { asset_id, resolution, from: floorToResolution(q.start, resolution), to, limit, take: 'first' }
      : { asset_id, resolution, from: window.earliestAllowed, to, limit, take: 'last' };
  const candles = await queryCandles(deps.engine, query, signal);
  if (candles.length === 0 && q.start === undefined) {
    const newest = await newestCandleBefore(deps.engine, asset_id, end, signal);
    if (newest !== null) assertInWindow(window, newest);
  }
  return candles;
}
