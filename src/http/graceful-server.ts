import type { Server, ServerResponse } from 'node:http';

/**
 * Longer than the idle timeouts of common load balancers and proxies (AWS ALB 60 s, nginx 60 s):
 * the upstream then always closes an idle connection first and never reuses one this server is
 * closing at that moment (a `socket hang up` for a request already sent).
 */
export const KEEP_ALIVE_TIMEOUT_MS = 75_000;

/**
 * Keep-alive settings and draining for the HTTP server. `drain()` (SIGTERM) stops taking connections,
 * closes the idle kept-alive ones, and lets every request already received finish with
 * `Connection: close`, so no client sends another request on a connection about to go away.
 */
export function gracefulServer(server: Server) {
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // Headers of a request must be allowed at least as long as the connection may idle before them.
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;

  const inFlight = new Set<ServerResponse>();
  let draining = false;
  const lastOnItsConnection = (res: ServerResponse) => {
    if (!res.headersSent) res.setHeader('Connection', 'close');
    // A stream already under way announced keep-alive: end the connection once it is complete.
    else res.once('finish', () => res.socket?.end());
  };
  server.on('request', (_req, res: ServerResponse) => {
    if (draining) lastOnItsConnection(res);
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });

  return {
    /** `onClosed` runs once every connection has ended. */
    drain(onClosed: () => void) {
      draining = true;
      for (const res of inFlight) lastOnItsConnection(res);
      server.close(onClosed);
      server.closeIdleConnections();
    },
    /** The grace period is over: cut whatever is left. */
    cut() {
      server.closeAllConnections();
    },
  };
}
