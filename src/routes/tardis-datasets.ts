import { Readable } from 'node:stream';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { checkHistoryWindow, completeBefore } from '../auth/history-window.js';
import { bookEventFold } from '../book-history/event-fold.js';
import type { AppDeps } from '../deps.js';
import { tardisBookChunks } from '../exports/tardis-book-file.js';
import { TARDIS_DATA_TYPES, TARDIS_EXCHANGE, tardisFileName, tardisHeader } from '../exports/tardis-csv.js';
import type { AppEnv } from '../http/context.js';
import { invalidParameter } from '../http/errors.js';
import { DATA_ERRORS, errorResponses } from '../http/openapi.js';
import { enumParam, parsed } from '../http/params.js';
import { streamResponse } from '../http/stream.js';
import { streamTardisTrades } from '../queries/tardis-trades.js';
import { DAY, utcDay } from '../time.js';

/**
 * Tardis's datasets API (docs/TARDIS.md §1, §3): `GET /v1/tardis/datasets/polymarket/{data_type}/
 * {YYYY}/{MM}/{DD}/{asset_id}.csv.gz`, one gzip CSV per asset and UTC day, so that Tardis's own
 * clients download from tickhouse given the endpoint `…/v1/tardis/datasets`. The file is gzip
 * whatever Accept-Encoding says (the clients save the bytes as they come), streamed: trades formatted
 * by the engine, the book files by folded books. A day without data is the header alone; an
 * unfinished day is a 400 (the clients keep a file for good); never a 404 (final in one client,
 * retried for an hour by another).
 */
const digits = (name: string, n: number, what: string) =>
  parsed(name, `must be ${n} digits (${what})`, (raw) => (new RegExp(`^\\d{${n}}$`).test(raw) ? Number(raw) : undefined)).openapi({
    type: 'string',
    pattern: `^\\d{${n}}$`,
  });

const datasetParams = z
  .object({
    exchange: enumParam('exchange', [TARDIS_EXCHANGE]),
    data_type: enumParam('data_type', TARDIS_DATA_TYPES),
    year: digits('year', 4, 'YYYY'),
    month: digits('month', 2, 'MM'),
    day: digits('day', 2, 'DD'),
    file: parsed('file', 'must be <asset_id>.csv.gz, the asset id 1-100 decimal digits', (raw) => /^(\d{1,100})\.csv\.gz$/i.exec(raw)?.[1]).openapi({
      type: 'string',
      pattern: '^\\d{1,100}\\.csv\\.gz$',
      example: '25245433628208476987364023432306599125597948324625578977436890641930158259698.csv.gz',
      description: 'The asset (token) id, Tardis’s `symbol`, then `.csv.gz`',
    }),
  })
  .superRefine((p, ctx) => {
    const at = Date.UTC(p.year, p.month - 1, p.day);
    if (new Date(at).getUTCMonth() !== p.month - 1 || new Date(at).getUTCDate() !== p.day || p.year < 1970) {
      ctx.addIssue({ code: 'custom', path: ['day'], message: 'year/month/day must be a calendar day (UTC) from 1970-01-01 on' });
    }
  });

const datasetRoute = createRoute({
  method: 'get',
  path: '/v1/tardis/datasets/{exchange}/{data_type}/{year}/{month}/{day}/{file}',
  operationId: 'getTardisDataset',
  tags: ['tardis'],
  summary: 'One asset’s day as a Tardis CSV file (gzip): incremental_book_L2, trades, book_snapshot_25, book_snapshot_5 or quotes',
  description:
    'Tardis’s downloadable CSV files (docs/TARDIS.md §1): point a Tardis client’s datasets endpoint at `…/v1/tardis/datasets`. ' +
    'The body is the gzip file whatever Accept-Encoding says (`Content-Type: application/gzip`, no Content-Encoding), named ' +
    '`polymarket_<data_type>_<YYYY-MM-DD>_<asset_id>.csv.gz`; Tardis’s exact header, µs timestamps, rows in (t, arrival) order. ' +
    'A day without data is the header line alone. A day that has not ended a minute ago is a 400 (clients keep files for good); ' +
    'a day before the plan’s window a 403. Unknown query parameters (the clients’ `retryAttempt`) are ignored. One data request per file.',
  security: [{ bearer: [] }],
  request: { params: datasetParams },
  responses: {
    200: { description: 'The gzip CSV file', content: { 'application/gzip': { schema: z.string().openapi({ format: 'binary' }) } } },
    ...errorResponses(...DATA_ERRORS),
  },
});

/** True when the plan's window holds no finished day (free: today only): no file can ever be served to it. */
function noDayFiles(c: Context<AppEnv>): boolean {
  const lastFinishedDay = Math.floor(completeBefore(c) / DAY) * DAY - DAY;
  return c.get('earliestAllowed') > lastFinishedDay;
}

const noFilesForPlan = (plan: string) =>
  `Your plan (${plan}) reads today only, so it downloads no day files: replay today’s finished minutes with /v1/tardis/data-feeds, or export ` +
  'them with /v1/ticks/export; a paid plan downloads every finished day of its window.';

export function registerTardisDatasetsRoute(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(datasetRoute, async (c) => {
    const p = c.req.valid('param');
    const start = Date.UTC(p.year, p.month - 1, p.day);
    const end = start + DAY;
    checkHistoryWindow(c, { explicitStart: start });
    if (end > completeBefore(c)) {
      const why = `${utcDay(start)} is not complete yet: a day's file is served once the day ended a minute ago`;
      throw invalidParameter('day', noDayFiles(c) ? `${why}. ${noFilesForPlan(c.get('effective').plan)}` : why);
    }
    const signal = c.req.raw.signal;
    const assetId = p.file;
    const type = p.data_type;
    const body =
      type === 'trades'
        ? streamTardisTrades(deps.engine, { exchange: TARDIS_EXCHANGE, assetId, start, end }, signal)
        : Readable.from(
            tardisBookChunks(type, { symbol: assetId, dayStart: start }, (book, visit) =>
              // From the snapshot before the day: the file opens with the book as the day began.
              bookEventFold(deps.engine, { assetId, from: start - 1, to: end - 1 }, book, visit, signal),
            ),
            { objectMode: false, highWaterMark: 1 },
          );
    const response = await streamResponse(c, body, {
      contentType: 'application/gzip',
      prefix: type === 'trades' ? tardisHeader(type) : undefined,
      encoding: { coding: 'gzip', header: false },
      headers: { 'Content-Disposition': `attachment; filename="${tardisFileName(type, utcDay(start), assetId)}"` },
    });
    return response as never;
  });
}
