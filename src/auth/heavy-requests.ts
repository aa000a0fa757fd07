import { randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import type { AccountStore } from '../accounts/store.js';
import type { AppEnv, AppVariables } from '../http/context.js';
import { ApiError } from '../http/errors.js';
import { whenResponseEnds } from '../http/response-end.js';
import { errorText, log } from '../log.js';
import { metrics } from '../metrics.js';

/**
 * Heavy requests: answers whose size and duration the client decides (an export of any range, a
 * Tardis file or slice, a replay WebSocket), each a fold or a stream that can keep a core busy for as
 * long as its client reads. A plan runs `concurrent_heavy` of them at once per account (src/plans.ts,
 * docs/API.md §2); one more is a 429 `too_many_concurrent_requests`, not counted (it comes before the
 * daily count). The count is the account store's: with Redis every replica of the service shares it
 * (a lease per request in the account's slot, renewed while the request runs, expiring on its own
 * when the process holding it died); the embedded store serves one process, which then holds them all.
 */
const HEAVY_PATHS = ['/v1/ticks/export', '/v1/orderbook/export', '/v1/replay/market'];
const HEAVY_PREFIXES = ['/v1/tardis/'];

export const isHeavyPath = (path: string) => HEAVY_PATHS.includes(path) || HEAVY_PREFIXES.some((prefix) => path.startsWith(prefix));

/** How long a lease lasts unless renewed, and how often the leases held are renewed. */
const LEASE_MS = 60_000;
const RENEW_MS = 20_000;
/** Seconds a refused client is told to wait: a slot frees when another request of the account ends. */
const HEAVY_RETRY_AFTER_SECONDS = 2;

/** Slots this process holds (every app of it), for /metrics. */
let heldHere = 0;
metrics.gauge(
  'tickhouse_heavy_requests',
  'Heavy requests (exports, Tardis files and slices, replays) holding a slot of their plan in this process',
  () => heldHere,
);
const refused = metrics.counter('tickhouse_heavy_requests_refused_total', 'Heavy requests refused with 429 too_many_concurrent_requests, by plan');

/** A slot held: released once, when its request has ended. */
export type HeavyLease = NonNullable<AppVariables['heavyLease']>;

/** The leases this process holds, renewed while they are held. */
export class HeavySlots {
  /** Lease id → its account. */
  private readonly held = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly accounts: AccountStore) {}

  /** A slot of `accountId` among `limit`, or null when they are all taken. */
  async take(accountId: string, limit: number): Promise<HeavyLease | null> {
    const lease = randomUUID();
    if (!(await this.accounts.takeSlot(accountId, lease, limit, LEASE_MS))) return null;
    this.held.set(lease, accountId);
    heldHere++;
    this.timer ??= setInterval(() => this.renew(), RENEW_MS).unref();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        heldHere--;
        this.held.delete(lease);
        if (this.held.size === 0) {
          clearInterval(this.timer);
          this.timer = undefined;
        }
        // A release that fails leaves the lease to expire within LEASE_MS.
        this.accounts.releaseSlot(accountId, lease).catch((err) => log.warn('heavy request slot not released', { error: errorText(err) }));
      },
    };
  }

  private renew(): void {
    const byAccount = new Map<string, string[]>();
    for (const [lease, account] of this.held) byAccount.set(account, [...(byAccount.get(account) ?? []), lease]);
    for (const [account, leases] of byAccount) {
      this.accounts.renewSlots(account, leases, LEASE_MS).catch((err) => log.warn('heavy request slots not renewed', { error: errorText(err) }));
    }
  }
}

/**
 * Takes a slot for a heavy request before it is counted and holds it until its answer has ended
 * (whenResponseEnds: a stream's last byte, not its handler's return). A route that hands its request
 * over to something longer-lived (the replay's WebSocket) hands the lease over (handOverHeavyLease).
 */
export function heavyRequests(slots: HeavySlots): MiddlewareHandler<AppEnv> {
  return async function heavyRequests(c, next) {
    if (!isHeavyPath(c.req.path)) return next();
    const { plan, concurrent_heavy: limit } = c.get('effective');
    const lease = await slots.take(c.get('account').id, limit);
    if (!lease) {
      refused.inc({ plan });
      const what = limit === 1 ? 'export, Tardis file or replay' : 'exports, Tardis files or replays';
      throw new ApiError(
        'too_many_concurrent_requests',
        `Your plan (${plan}) runs ${limit} ${what} at a time: retry once the one running has ended.`,
        { limit, plan },
        { 'Retry-After': String(HEAVY_RETRY_AFTER_SECONDS) },
      );
    }
    c.set('heavyLease', lease);
    try {
      await next();
    } catch (err) {
      lease.release();
      throw err;
    }
    if (c.get('heavyLease') === lease) whenResponseEnds(c, () => lease.release());
  };
}

/** The request's slot is no longer the middleware's to release: whoever took `c.get('heavyLease')` does (the replay, at its connection's end). */
export function handOverHeavyLease(c: Context<AppEnv>): void {
  c.set('heavyLease', undefined);
}
