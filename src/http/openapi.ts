import { z } from '@hono/zod-openapi';

/** Shared OpenAPI pieces of the route files: the error body (API.md §6) and the success envelope. */
export const ErrorSchema = z
  .object({ detail: z.object({ error: z.string(), message: z.string() }).passthrough() })
  .openapi('Error');

export const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: ErrorSchema } } });

/** `{"success": true, "data": …}` (API.md §1). */
export const envelope = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });
