import { createHash } from 'node:crypto';
import type { Context } from 'hono';
import { ok } from './envelope.js';

/**
 * Answers about history (an instant before the asset's ingest watermark) never change unless data
 * arrives late, and then their bytes change: the ETag is a digest of the body, so a client cache may
 * keep them for good and revalidate with If-None-Match, which gets a 304 without a body.
 */
export const IMMUTABLE = 'private, max-age=31536000, immutable';

export function okHistorical<T>(c: Context, data: T, historical: boolean) {
  if (!historical) return ok(c, data);
  const etag = `"${createHash('sha256')
    .update(JSON.stringify({ success: true, data }))
    .digest('base64url')
    .slice(0, 32)}"`;
  c.header('ETag', etag);
  c.header('Cache-Control', IMMUTABLE);
  if (matches(c.req.header('if-none-match'), etag)) return c.body(null, 304);
  return ok(c, data);
}

/** If-None-Match (RFC 9110 §13.1.2): `*`, or a list of tags compared weakly (a `W/` prefix is ignored). */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}
