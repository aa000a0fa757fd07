import type { z } from '@hono/zod-openapi';
import type { Context, TypedResponse } from 'hono';

/**
 * The success envelope of docs/API.md §1, built here and nowhere else: `{"success": true, "data": ...}`,
 * plus `meta` on list responses.
 */
export function ok<T>(c: Context, data: T, meta?: Record<string, unknown>) {
  return c.json(meta === undefined ? { success: true as const, data } : { success: true as const, data, meta }, 200);
}

/** The same envelope with 201 Created (POST /v1/register). */
export function created<T>(c: Context, data: T) {
  return c.json({ success: true as const, data }, 201);
}

/**
 * The same envelope around a list whose items are streamed as they come from the engine
 * (http/stream.ts): the text before the first item, and after the last one, with its `meta`.
 */
export const STREAMED_LIST_PREFIX = '{"success":true,"data":[';
export const streamedListSuffix = (meta: Record<string, unknown>) => `],"meta":${JSON.stringify(meta)}}`;

type DocumentedJson = { content: { 'application/json': { schema: z.ZodType } } };

/**
 * Types a streamed envelope as the JSON of `documented` (the route's 200 response, see
 * openapi.ts successResponse): the bytes come from the engine, so there is no value to hand to
 * c.json() for the type to be inferred from, and the route's type check still holds the
 * declaration and the handler together.
 */
export function streamedJson<D extends DocumentedJson>(_documented: D, response: Response) {
  return response as Response & TypedResponse<z.output<D['content']['application/json']['schema']>, 200, 'json'>;
}
