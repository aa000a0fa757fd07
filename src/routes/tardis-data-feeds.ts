import { Readable } from 'node:stream';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { checkHistoryWindow, completeBefore } from '../auth/history-window.js';
import type { AppDeps } from '../deps.js';
import { TARDIS_EXCHANGE } from '../exports/tardis-csv.js';
import type { AppEnv } from '../http/context.js';
import { invalidParameter } from '../http/errors.js';
import { DATA_ERRORS, errorResponses } from '../http/openapi.js';
import { enumParam, intParam, parsed } from '../http/params.js';
import { compressedEncoding, streamResponse } from '../http/stream.js';
import { feedChunks } from '../replay/tardis-feed.js';
import type { ReplayRow } from '../replay/wire.js';

/**
 * Tardis's HTTP replay API (docs/TARDIS.md §2, §3): `GET /v1/tardis/data-feeds/polymarket?from=&offset=
 * &filters=&sliceSize=`, the minutes [from + offset, from + offset + sliceSize) of the stored market
 * channel, one line per message, so that `tardis_dev.replay(…, endpoint=…/v1/tardis)` replays
 * tickhouse. Always compressed (zstd when accepted, else gzip: the clients decode nothing else),
 * `x-slice-size` the size served (the clients advance by it) and `x-suggested-slice-size` how many
 * minutes to ask next (they do, when filters are given), so a day costs a handful of requests.
 */

/** Minutes a client is told to ask per request: a day in 2 + 6 requests (the first and last minutes are one each). */
export const SUGGESTED_SLICE_MINUTES = 240;
const MAX_SLICE_MINUTES = 1440;
/** Assets one request may name, as one replay WebSocket may subscribe. */
const MAX_ASSETS = 500;
/** Channels tickhouse stores, by the market channel's event_type (Tardis's channel names for Polymarket). */
const STORED_CHANNELS = ['book', 'price_change', 'last_trade_price', 'tick_size_change', 'best_bid_ask', 'new_market', 'market_resolved'] as const;
/** Tardis's other Polymarket channel (the sports feed): accepted in filters, never recorded here, so never sent. */
const OTHER_CHANNELS = ['sport_result'];

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?)?Z?$/;

/** A UTC date or time, floored to the minute (the clients send `2024-01-01T00:00:00.000Z`). */
const fromParam = () =>
  parsed('from', 'must be a UTC date (2024-01-01) or time (2024-01-01T00:00:00.000Z)', (raw) => {
    const m = ISO_TIME.exec(raw);
    if (!m) return undefined;
    const [y, mo, d, h = 0, mi = 0] = m.slice(1, 6).map((v) => Number(v ?? 0));
    const at = Date.UTC(y, mo - 1, d, h, mi);
    const back = new Date(at);
    return y >= 1970 && back.getUTCMonth() === mo - 1 && back.getUTCDate() === d && back.getUTCHours() === h && back.getUTCMinutes() === mi ? at : undefined;
  }).openapi({ type: 'string', example: '2026-11-20T00:00:00.000Z' });

type Filters = Map<string, Set<string>>;

/** `[{"channel": "book", "symbols": ["<asset id>", …]}, …]` → asset → its channels. */
function parseFilters(raw: string): Filters | string {
  let list: unknown;
  try {
    list = JSON.parse(raw);
  } catch {
    return 'filters must be JSON: [{"channel":"book","symbols":["<asset id>"]}, …]';
  }
  if (!Array.isArray(list) || list.length === 0) return 'filters must be a non-empty array of {"channel", "symbols"}';
  const byAsset: Filters = new Map();
  for (const item of list) {
    const { channel, symbols } = (item ?? {}) as { channel?: unknown; symbols?: unknown };
    if (typeof channel !== 'string' || ![...STORED_CHANNELS, ...OTHER_CHANNELS].includes(channel)) {
      return `filters[].channel must be one of ${[...STORED_CHANNELS, ...OTHER_CHANNELS].join(', ')}`;
    }
    if (!Array.isArray(symbols) || symbols.length === 0 || !symbols.every((s) => typeof s === 'string' && /^\d{1,100}$/.test(s))) {
      return 'filters[].symbols must list asset ids (1-100 decimal digits): Polymarket channels are replayed per asset';
    }
    for (const asset of symbols as string[]) {
      if (!byAsset.has(asset)) byAsset.set(asset, new Set());
      byAsset.get(asset)!.add(channel);
    }
  }
  if (byAsset.size > MAX_ASSETS) return `filters may name at most ${MAX_ASSETS} assets`;
  return byAsset;
}

const feedQuery = z.object({
  from: fromParam(),
  offset: intParam('offset', 0, 1_000_000_000).optional().openapi({ description: 'Minutes after `from` the slice starts; default 0' }),
  sliceSize: intParam('sliceSize', 1, MAX_SLICE_MINUTES).optional().openapi({ description: 'Minutes in the slice; default 1' }),
  filters: parsed('filters', 'must be a JSON array of {"channel", "symbols"}', (raw) => raw).openapi({
    type: 'string',
    description:
      `JSON: \`[{"channel":"book","symbols":["<asset id>"]}, …]\`; channels ${STORED_CHANNELS.join(', ')} (also accepted, never stored: ` +
      `${OTHER_CHANNELS.join(', ')}); symbols are asset ids, required, at most ${MAX_ASSETS} in all`,
    example: '[{"channel":"book","symbols":["25245433628208476987364023432306599125597948324625578977436890641930158259698"]}]',
  }),
});

const feedRoute = createRoute({
  method: 'get',
  path: '/v1/tardis/data-feeds/{exchange}',
  operationId: 'getTardisDataFeed',
  tags: ['tardis'],
  summary: 'Minutes of the stored market channel as Tardis’s HTTP replay API serves them',
  description:
    'Tardis’s HTTP replay (docs/TARDIS.md §2): point a Tardis client’s endpoint at `…/v1/tardis`. The minutes [from + offset, from + offset + ' +
    'sliceSize) of the messages the replay WebSocket sends for the assets and channels in `filters`, in its order, one line each: ' +
    '`<receive time, ISO 8601 UTC with 7 decimals>Z <message JSON>`, an empty line where the recorder lost its connection. zstd when ' +
    'Accept-Encoding allows it, gzip otherwise (always compressed). Headers `x-slice-size` (the minutes served) and `x-suggested-slice-size`. ' +
    'A slice that has not ended a minute ago is a 400; one starting before the plan’s window a 403. One data request per slice.',
  security: [{ bearer: [] }],
  request: { params: z.object({ exchange: enumParam('exchange', [TARDIS_EXCHANGE]) }), query: feedQuery },
  responses: {
    200: {
      description: 'The slice, compressed (Content-Encoding zstd or gzip)',
      headers: z.object({
        'x-slice-size': z.string().openapi({ description: 'Minutes in this slice (the sliceSize asked, default 1)' }),
        'x-suggested-slice-size': z.string().openapi({ description: `Minutes to ask per request (${SUGGESTED_SLICE_MINUTES})` }),
      }),
      content: { 'text/plain; charset=utf-8': { schema: z.string() } },
    },
    ...errorResponses(...DATA_ERRORS),
  },
});

export function registerTardisDataFeedsRoute(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(feedRoute, async (c) => {
    const q = c.req.valid('query');
    const filters = parseFilters(q.filters);
    if (typeof filters === 'string') throw invalidParameter('filters', filters);
    const size = q.sliceSize ?? 1;
    const lo = q.from + (q.offset ?? 0) * 60_000;
    const hi = lo + size * 60_000;
    checkHistoryWindow(c, { explicitStart: lo });
    if (hi > completeBefore(c)) {
      throw invalidParameter('offset', `the slice ending ${new Date(hi).toISOString()} is not complete yet: slices are served once they ended a minute ago`);
    }
    const wanted = (row: ReplayRow) => filters.get(row[3])?.has(row[2]) === true;
    const slice = { assets: [...filters.keys()], wanted, lo, hi };
    const body = Readable.from(feedChunks(deps.engine, slice, c.req.raw.signal), { objectMode: false, highWaterMark: 1 });
    const response = await streamResponse(c, body, {
      contentType: 'text/plain; charset=utf-8',
      encoding: { coding: compressedEncoding(c.req.header('accept-encoding')), header: true },
      headers: { 'x-slice-size': String(size), 'x-suggested-slice-size': String(SUGGESTED_SLICE_MINUTES) },
    });
    return response as never;
  });
}
