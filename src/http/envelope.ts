import type { Context } from 'hono';

/** `{"success": true, "data": ..., "meta": ...}` (meta only on list responses, API.md §1). */
export function ok<T>(c: Context, data: T, meta?: Record<string, unknown>, status: 200 | 201 = 200) {
  return c.json(meta === undefined ? { success: true as const, data } : { success: true as const, data, meta }, status);
}
