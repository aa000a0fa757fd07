import type { SocketEvent } from './market-feed.js';

/**
 * Tokens that went live on a socket and have sent nothing since: the initial dump brings every live
 * token's book at once, so a token still silent after `silentAfterMs` is one the server is not serving
 * (an asset past its per-connection limit, an id it does not know). Counted on the status line and at
 * /metrics; a token that left its socket (closed, unsubscribed) is not live, so not silent.
 */
export class SilentTokens {
  /** token → when it went live (Unix ms), until its first row. */
  private readonly awaiting = new Map<string, number>();

  constructor(private readonly silentAfterMs: number) {}

  onSocketEvent(e: SocketEvent): void {
    if (e.kind === 'open') for (const a of e.assets) this.awaiting.set(a, e.at);
    else if (e.kind === 'close' || e.kind === 'unsubscribe') for (const a of e.assets) this.awaiting.delete(a);
  }

  /** A row of the token was produced (cheap when nothing is awaited, as on a recorder in its steady state). */
  heard(asset: string): void {
    if (this.awaiting.size > 0) this.awaiting.delete(asset);
  }

  /** Tokens live for longer than `silentAfterMs` without a row. */
  count(now = Date.now()): number {
    let n = 0;
    for (const since of this.awaiting.values()) if (now - since > this.silentAfterMs) n++;
    return n;
  }
}
