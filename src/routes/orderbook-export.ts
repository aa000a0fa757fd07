import { Readable } from 'node:stream';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { checkHistoryWindow, existingEnd } from '../auth/history-window.js';
import { type BookRowVisitor, bookRows, moreRowsThan } from '../book-history/dataset-rows.js';
import type { AppDeps } from '../deps.js';
import { type BookExportFormat, encodeBookRows, parquetMaxRows } from '../exports/book-formats.js';
import type { AppEnv } from '../http/context.js';
import { invalidParameter } from '../http/errors.js';
import { DATA_ERRORS, errorResponses } from '../http/openapi.js';
import { assetIdParam, enumParam, intParam, orderedRange, timeParam } from '../http/params.js';
import { streamResponse } from '../http/stream.js';
import { MAX_TIME } from '../time.js';

const FORMATS = ['csv', 'jsonl', 'parquet'] as const;

const CONTENT_TYPES: Record<BookExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/x-ndjson',
  parquet: 'application/vnd.apache.parquet',
};

const exportRoute = createRoute({
  method: 'get',
  path: '/v1/orderbook/export',
  operationId: 'exportOrderbook',
  tags: ['orderbook'],
  summary: 'The top `depth` levels after every book change (or every `interval` ms) as CSV, JSONL or Parquet, streamed',
  description:
    'Each row is the book `/v1/orderbook?timestamp=<row time>&limit=<depth>` returns: one row per millisecond with book events in [start, end] ' +
    '(after all of that millisecond’s events), or one at every multiple of `interval` (since the Unix epoch) in [start, end] (points before the asset’s ' +
    'first book skipped). ' +
    'CSV header `timestamp,best_bid,best_ask,bid_price_0,bid_size_0,…,ask_price_{depth-1},ask_size_{depth-1}`, levels best first, absent levels empty; ' +
    'JSONL `{"timestamp","best_bid","best_ask","bids":[[price,size],…],"asks":[[price,size],…]}`; Parquet: the CSV columns, `timestamp` Int64, the rest ' +
    'nullable Float64. ' +
    'File name `orderbook_<asset_id>_<start>_<end>.<format>`. gzip or zstd per Accept-Encoding. A failure after the headers aborts the connection. ' +
    'A Parquet file holds at most 262,144 column chunks (row groups of ~131,072 cells: ~211,000 rows at depth 100, ~3.2 million at depth 25): a request ' +
    'for more is a 400 on `format`.',
  security: [{ bearer: [] }],
  request: {
    query: orderedRange(
      z.object({
        asset_id: assetIdParam(),
        start: timeParam('start'),
        end: timeParam('end'),
        depth: intParam('depth', 1, 100).optional().openapi({ description: 'Levels per side, default 25' }),
        interval: intParam('interval', 1, MAX_TIME).optional().openapi({ description: 'Grid step in ms; without it one row per book change' }),
        format: enumParam('format', FORMATS).optional().openapi({ description: 'Default csv' }),
      }),
      'start',
      'end',
    ),
  },
  responses: {
    200: {
      description: 'The dataset file',
      content: {
        'text/csv; charset=utf-8': { schema: z.string() },
        'application/x-ndjson': { schema: z.string() },
        'application/vnd.apache.parquet': { schema: z.string().openapi({ format: 'binary' }) },
      },
    },
    ...errorResponses(...DATA_ERRORS),
  },
});

export function registerOrderbookExportRoute(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(exportRoute, async (c) => {
    const q = c.req.valid('query');
    checkHistoryWindow(c, { explicitStart: q.start });
    const format = q.format ?? 'csv';
    const depth = q.depth ?? 25;
    const query = { assetId: q.asset_id, start: q.start, end: existingEnd(c, q.end), interval: q.interval };
    if (format === 'parquet' && (await moreRowsThan(deps.engine, query, parquetMaxRows(depth), c.req.raw.signal))) {
      throw invalidParameter(
        'format',
        `a Parquet book export holds at most ${parquetMaxRows(depth)} rows at depth ${depth} (its footer lists every row group, and must stay ` +
          'readable): narrow start..end, raise interval or lower depth, or ask for csv or jsonl, which have no such bound',
      );
    }
    const rows = (visit: BookRowVisitor) => bookRows(deps.engine, query, visit, c.req.raw.signal);
    const body = Readable.from(encodeBookRows(rows, format, depth), { objectMode: false, highWaterMark: 1 });
    const response = await streamResponse(c, body, {
      contentType: CONTENT_TYPES[format],
      headers: { 'Content-Disposition': `attachment; filename="orderbook_${q.asset_id}_${q.start}_${q.end}.${format}"` },
    });
    return response as never;
  });
}
