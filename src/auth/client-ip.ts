import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';

/**
 * The client address for the registration flood guard: the socket's peer, unless that peer is the
 * configured trusted proxy, in which case the first X-Forwarded-For entry (the proxy appends the
 * address it saw, so only a proxy we trust may speak for the client).
 * In-memory requests (`app.request()` in tests) have no socket and share the address 'unknown'.
 */
export function clientIp(c: Context, trustedProxy: string | undefined): string {
  let peer: string | undefined;
  try {
    peer = getConnInfo(c).remote.address;
  } catch {
    peer = undefined;
  }
  const address = normalize(peer) ?? 'unknown';
  if (trustedProxy && address === normalize(trustedProxy)) {
    const forwarded = c.req.header('x-forwarded-for')?.split(',')[0]?.trim();
    if (forwarded) return normalize(forwarded)!;
  }
  return address;
}

/** `::ffff:1.2.3.4` (an IPv4 peer on a dual-stack socket) is the same client as `1.2.3.4`. */
function normalize(address: string | undefined) {
  return address?.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
}
