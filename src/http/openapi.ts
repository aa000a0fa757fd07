import { z } from '@hono/zod-openapi';
import { SEMANTICS } from './data-semantics.js';

/** Shared OpenAPI pieces of the route files: the success envelope and the error bodies (docs/API.md §1, §6). */

/** `{"success": true, "data": …}` (with `meta` on lists), as a documented 200/201 response. */
export function successResponse<T extends z.ZodType>(description: string, data: T, meta?: z.ZodType) {
  const schema = meta ? z.object({ success: z.literal(true), data, meta }) : z.object({ success: z.literal(true), data });
  return { description, content: { 'application/json': { schema } } };
}

export const ErrorSchema = z
  .object({
    detail: z
      .object({ error: z.string().openapi({ example: 'invalid_parameter' }), message: z.string() })
      .catchall(z.unknown())
      .openapi({ description: 'Plus the members the code carries (docs/API.md §6), e.g. param, plan, earliest_allowed, limit' }),
  })
  .openapi('Error');

/** The one error body without a code (docs/API.md §6). */
export const NotFoundSchema = z.object({ detail: z.object({ message: z.string() }) }).openapi('NotFound');

const errorBody = (description: string, schema: z.ZodType = ErrorSchema) => ({ description, content: { 'application/json': { schema } } });

/** Every error response of the API, by status; each route spreads in the ones it can answer. */
const ERROR_RESPONSES = {
  400: errorBody(
    'invalid_parameter (extra: param): a missing, malformed or out-of-range parameter, or a body that is not JSON; bad_request: HTTP the server could not ' +
      'read (a request-target or Host that is not a URL, broken framing)',
  ),
  401: errorBody('invalid_api_key: missing or unknown API key (invalid_signature on the payment callback)'),
  403: errorBody('data_access_denied (extra: plan, earliest_allowed): before the plan’s history window'),
  404: errorBody('Not found: no book at or before that time, or no such invoice; `detail` holds only `message`', NotFoundSchema),
  413: errorBody('payload_too_large: request body over 16 KiB'),
  426: errorBody('upgrade_required: a plain request to a WebSocket endpoint (the replay)'),
  429: {
    ...errorBody(
      'rate_limit_exceeded (extra: limit, plan) on data routes; too_many_concurrent_requests (extra: limit, plan) when the plan’s heavy requests ' +
        '(exports, Tardis files and slices, replays) are all running, not counted; too_many_registrations (extra: limit) on POST /v1/register. ' +
        'Retry-After says when',
    ),
    headers: {
      'Retry-After': { description: 'Seconds until the limit resets (until a heavy request may have ended: 2)', schema: { type: 'integer' } },
      'X-RateLimit-Reset': { description: `On data routes. ${SEMANTICS.rateLimit}`, schema: { type: 'integer' } },
    },
  },
  500: errorBody('internal_error (extra: request_id)'),
  502: errorBody('payment_provider_error: the payment processor failed; nothing was recorded'),
  503: errorBody(
    'service_unavailable: ClickHouse or the account store is unreachable, or an export file could not be written (before its first byte); Retry-After ' +
      'says when to retry (payments_unavailable on billing when no payment provider is configured)',
  ),
} as const;

type DocumentedErrorStatus = keyof typeof ERROR_RESPONSES;

/** The documented error responses for `statuses` (500 is always possible and always included). */
export function errorResponses<const S extends DocumentedErrorStatus>(...statuses: S[]): Pick<typeof ERROR_RESPONSES, S | 500> {
  const picked: Partial<Record<DocumentedErrorStatus, (typeof ERROR_RESPONSES)[DocumentedErrorStatus]>> = { 500: ERROR_RESPONSES[500] };
  for (const status of statuses) picked[status] = ERROR_RESPONSES[status];
  return picked as Pick<typeof ERROR_RESPONSES, S | 500>;
}

/** What every authenticated data route can answer besides 200 (docs/API.md §2, §5, §6). */
export const DATA_ERRORS = [400, 401, 403, 429, 503] as const;
