import { z } from 'zod';
import { assertInWindow, endInWindow } from '../../auth/history-window.js';
import { invalidParameter } from '../../http/errors.js';
import { tickSummary } from '../../queries/tick-summary.js';
import { MAX_TIME } from '../../time.js';
import { assertOrdered, assetId, instant, intIn, oneOf, toMs } from '../inputs.js';
import { defineTool } from '../tool.js';

/** Tick tools: a fixed-size summary of any range, and the link that fetches a whole range as a file. */

const RANGE = {
  asset_id: assetId(),
  start: instant('Start of the range (inclusive): Unix ms or ISO 8601'),
  end: instant('End of the range (inclusive): Unix ms or ISO 8601'),
};

const Tick = z.object({
  t: z.number().int(),
  event: z.enum(['price_change', 'book', 'last_trade_price']),
  side: z.string(),
  best_bid: z.number(),
  best_ask: z.number(),
  price: z.number(),
  size: z.number(),
});

/** The range as the caller's window allows it: a start before the window is a 403, the end is clamped to now + 1 minute. */
function rangeOf(args: { start: number | string; end: number | string }, window: Parameters<typeof endInWindow>[0]) {
  const start = toMs('start', args.start);
  const end = toMs('end', args.end);
  assertOrdered(start, end);
  assertInWindow(window, start);
  return { start, end };
}

export const getTickSummary = defineTool({
  name: 'get_tick_summary',
  title: 'Tick summary of a range',
  description:
    'Summary of one outcome token’s ticks with start ≤ t ≤ end (inclusive, Unix ms): the number of ticks and of each event (price_change, book, ' +
    'last_trade_price), the first and last tick (as GET /v1/ticks lists them), and the trades: count, volume (shares), notional (Σ price × size, USDC) ' +
    'and VWAP (notional / volume), rounded to 6 decimals, low and high price. Bounded: a fixed shape (~700 bytes) whatever the range.',
  input: z.strictObject(RANGE),
  output: z.object({
    asset_id: z.string(),
    start: z.number().int(),
    end: z.number().int(),
    ticks: z.number().int(),
    events: z.object({ price_change: z.number().int(), book: z.number().int(), last_trade_price: z.number().int() }),
    first: Tick.nullable(),
    last: Tick.nullable(),
    trades: z.object({
      count: z.number().int(),
      volume: z.number(),
      notional: z.number(),
      vwap: z.number().nullable(),
      low: z.number().nullable(),
      high: z.number().nullable(),
    }),
  }),
  async run(args, deps, call) {
    const { start, end } = rangeOf(args, call.window);
    const summary = await tickSummary(deps.engine, { asset_id: args.asset_id, start, end: endInWindow(call.window, end) }, call.signal);
    return { ...summary, end };
  },
});

const FORMATS = ['csv', 'jsonl', 'parquet'] as const;

export const getExportLink = defineTool({
  name: 'get_export_link',
  title: 'Link to an export',
  description:
    'For ranges too large to return here: the URL that streams the whole range as a file (csv, jsonl or parquet) and a curl command for it. ' +
    'dataset ticks = every tick (GET /v1/ticks/export; event_type filters); book_snapshots = the top `depth` levels after every book change, or every ' +
    '`interval` ms (GET /v1/orderbook/export). The download needs the header Authorization: Bearer <API key> (never put in the link) and counts as one ' +
    'more request. The range is checked against the plan’s window now. Bounded: one link (~600 bytes).',
  input: z.strictObject({
    dataset: oneOf(['ticks', 'book_snapshots'] as const, 'ticks or book_snapshots'),
    ...RANGE,
    format: oneOf(FORMATS, 'File format (default csv)').optional(),
    event_type: oneOf(['price_change', 'book', 'last_trade_price'] as const, 'ticks only: one event type').optional(),
    depth: intIn(1, 100, 'book_snapshots only: levels per side (default 25)').optional(),
    interval: intIn(1, MAX_TIME, 'book_snapshots only: one row every this many ms instead of every change').optional(),
  }),
  output: z.object({
    dataset: z.enum(['ticks', 'book_snapshots']),
    format: z.enum(FORMATS),
    url: z.string(),
    curl: z.string(),
  }),
  async run(args, deps, call) {
    const { start, end } = rangeOf(args, call.window);
    const other = args.dataset === 'ticks' ? (['depth', 'interval'] as const).find((name) => args[name] !== undefined) : args.event_type && 'event_type';
    if (other) throw invalidParameter(other, `${other} does not apply to dataset ${args.dataset}`);
    const format = args.format ?? 'csv';
    const query = new URLSearchParams({ asset_id: args.asset_id, start: String(start), end: String(end), format });
    if (args.dataset === 'ticks' && args.event_type) query.set('event_type', args.event_type);
    if (args.dataset === 'book_snapshots' && args.depth !== undefined) query.set('depth', String(args.depth));
    if (args.dataset === 'book_snapshots' && args.interval !== undefined) query.set('interval', String(args.interval));
    const path = args.dataset === 'ticks' ? '/v1/ticks/export' : '/v1/orderbook/export';
    const url = `${deps.config.publicUrl}${path}?${query}`;
    const file = `${args.dataset === 'ticks' ? 'ticks' : 'orderbook'}_${args.asset_id}_${start}_${end}.${format}`;
    return { dataset: args.dataset, format, url, curl: `curl -H "Authorization: Bearer $TICKHOUSE_API_KEY" -o ${file} '${url}'` };
  },
});
