import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { checkHistoryWindow, existingEnd } from '../auth/history-window.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { STREAMED_LIST_PREFIX, streamedJson, streamedListSuffix } from '../http/envelope.js';
import { invalidParameter } from '../http/errors.js';
import { DATA_ERRORS, errorResponses, successResponse } from '../http/openapi.js';
import { assetIdParam, enumParam, fieldListParam, intParam, orderedRange, textParam, timeParam } from '../http/params.js';
import { streamResponse } from '../http/stream.js';
import { csvHeader, type ExportFormat, JsonPage, streamTicksPage, TICK_FIELDS, type TickPosition } from '../queries/ticks.js';
import { streamTicksExport } from '../queries/ticks-export.js';

const EVENT_TYPES = ['price_change', 'book', 'last_trade_price'] as const;
const EXPORT_FORMATS = ['csv', 'jsonl', 'parquet'] as const;

const FIELDS_NOTE =
  '`book_side`: `bid`/`ask` on price_change ticks (the book side the change set), "" otherwise; `taker_side`: `buy`/`sell` on last_trade_price ticks, ' +
  '"" otherwise (and on trades ingested before the side was kept); `local_t`: when the frame was received, Unix ms with up to 3 decimals (= `t` where ' +
  'unknown, docs/INGEST.md §4); `seq`: the stored arrival order. Without `fields` the output is exactly the contract’s.';

const fieldsParam = () =>
  fieldListParam('fields', TICK_FIELDS)
    .optional()
    .openapi({ description: `Extra columns after the contract’s, in this order: ${TICK_FIELDS.join(', ')}; or \`all\`. ${FIELDS_NOTE}` });

const ticksQuery = orderedRange(
  z.object({
    asset_id: assetIdParam(),
    start: timeParam('start'),
    end: timeParam('end'),
    event_type: enumParam('event_type', EVENT_TYPES).optional(),
    limit: intParam('limit', 1, 100_000).optional(),
    cursor: textParam('cursor', 200).optional().openapi({ description: 'meta.next_cursor of the previous page' }),
    fields: fieldsParam(),
  }),
  'start',
  'end',
);

const exportQuery = orderedRange(
  z.object({
    asset_id: assetIdParam(),
    start: timeParam('start'),
    end: timeParam('end'),
    format: enumParam('format', EXPORT_FORMATS).optional(),
    event_type: enumParam('event_type', EVENT_TYPES).optional(),
    fields: fieldsParam(),
  }),
  'start',
  'end',
);

const Tick = z
  .object({
    t: z.number().int(),
    event: z.enum(EVENT_TYPES),
    side: z.string(),
    best_bid: z.number(),
    best_ask: z.number(),
    price: z.number(),
    size: z.number(),
    book_side: z.enum(['bid', 'ask', '']).optional().openapi({ description: 'With fields=book_side' }),
    taker_side: z.enum(['buy', 'sell', '']).optional().openapi({ description: 'With fields=taker_side' }),
    local_t: z.number().optional().openapi({ description: 'With fields=local_t: receive time, Unix ms with up to 3 decimals' }),
    seq: z.number().int().optional().openapi({ description: 'With fields=seq: arrival order' }),
  })
  .openapi('Tick');

const ticksRoute = createRoute({
  method: 'get',
  path: '/v1/ticks',
  operationId: 'getTicks',
  tags: ['ticks'],
  summary: 'Raw ticks of one asset, ascending by time then arrival, with cursor pagination',
  security: [{ bearer: [] }],
  request: { query: ticksQuery },
  responses: {
    200: successResponse('One page of ticks', z.array(Tick), z.object({ count: z.number().int(), next_cursor: z.string().nullable() })),
    ...errorResponses(...DATA_ERRORS),
  },
});

const exportRoute = createRoute({
  method: 'get',
  path: '/v1/ticks/export',
  operationId: 'exportTicks',
  tags: ['ticks'],
  summary: 'Every tick of a range as CSV, JSONL or Parquet, streamed',
  description:
    'CSV header `timestamp,event_type,side,best_bid,best_ask,price,size`; JSONL and Parquet members `t, event, side, best_bid, best_ask, price, size` (`t` ' +
    'in Unix ms), then the columns `fields` asks for, in the order book_side, taker_side, local_t, seq. gzip or zstd per Accept-Encoding. A failure ' +
    'after the headers aborts the connection.',
  security: [{ bearer: [] }],
  request: { query: exportQuery },
  responses: {
    200: {
      description: 'The export file',
      content: {
        'text/csv; charset=utf-8': { schema: z.string() },
        'application/x-ndjson': { schema: z.string() },
        'application/vnd.apache.parquet': { schema: z.string().openapi({ format: 'binary' }) },
      },
    },
    ...errorResponses(...DATA_ERRORS),
  },
});

const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/x-ndjson',
  parquet: 'application/vnd.apache.parquet',
};

/**
 * A cursor names the first tick of the next page as (its ms, how many matching ticks of that ms come
 * before it), base64url-encoded so clients treat it as opaque. Resuming there neither skips nor
 * repeats a tick, even inside a run of equal timestamps.
 */
export function encodeCursor(p: TickPosition): string {
  return Buffer.from(`${p.t}:${p.skip}`).toString('base64url');
}

export function decodeCursor(raw: string): TickPosition {
  const m = /^(\d{1,16}):(\d{1,16})$/.exec(Buffer.from(raw, 'base64url').toString('latin1'));
  const p = m && { t: Number(m[1]), skip: Number(m[2]) };
  if (!p || !Number.isSafeInteger(p.t) || !Number.isSafeInteger(p.skip) || encodeCursor(p) !== raw) {
    throw invalidParameter('cursor', 'cursor must be a meta.next_cursor value returned by a previous /v1/ticks response');
  }
  return p;
}

export function registerTicksRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(ticksRoute, async (c) => {
    const q = c.req.valid('query');
    const from = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
    checkHistoryWindow(c, { explicitStart: q.start });
    const limit = q.limit ?? 10_000;
    const range = { asset_id: q.asset_id, start: q.start, end: existingEnd(c, q.end), event_type: q.event_type, fields: q.fields };
    const page = new JsonPage(limit, from);
    const response = await streamResponse(c, streamTicksPage(deps.engine, range, limit, from, c.req.raw.signal), {
      contentType: 'application/json',
      prefix: STREAMED_LIST_PREFIX,
      mapChunk: (chunk) => page.map(chunk),
      suffix: () => {
        const next = page.next();
        return streamedListSuffix({ count: page.count, next_cursor: next && encodeCursor(next) });
      },
    });
    return streamedJson(ticksRoute.responses[200], response);
  });

  app.openapi(exportRoute, async (c) => {
    const q = c.req.valid('query');
    checkHistoryWindow(c, { explicitStart: q.start });
    const format = q.format ?? 'csv';
    const range = { asset_id: q.asset_id, start: q.start, end: existingEnd(c, q.end), event_type: q.event_type, fields: q.fields };
    const response = await streamResponse(c, streamTicksExport(deps.engine, range, format, c.req.raw.signal), {
      contentType: CONTENT_TYPES[format],
      headers: { 'Content-Disposition': `attachment; filename="ticks_${q.asset_id}_${q.start}_${q.end}.${format}"` },
      prefix: format === 'csv' ? csvHeader(q.fields) : undefined,
    });
    return response;
  });
}
