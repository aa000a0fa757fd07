import type { Context, MiddlewareHandler } from 'hono';
import { type EffectivePlan, effectivePlan } from '../accounts/effective-plan.js';
import type { Account } from '../accounts/types.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { ApiError } from '../http/errors.js';
import { whenResponseEnds } from '../http/response-end.js';
import { errorText, log } from '../log.js';
import { nextUtcMidnight, utcDay } from '../time.js';
import { windowAt } from './history-window.js';
import { hashApiKey, looksLikeApiKey } from './keys.js';

type AuthDeps = Pick<AppDeps, 'accounts' | 'clock' | 'config'>;

export const invalidKey = () =>
  new ApiError('invalid_api_key', 'A valid API key is required: send the header Authorization: Bearer <key> (get a key with POST /v1/register).');

/**
 * `Authorization: Bearer <key>` → the account, its effective plan (expiry applied) and the start of
 * its history window on the context. Missing header, other scheme or unknown key → 401; an account
 * store that cannot be reached → 503 (the store throws it). With `queryKey` (the replay WebSocket,
 * whose clients often cannot set headers) a `key` query parameter stands in for a missing header.
 */
export function requireAuth(deps: AuthDeps, options: { queryKey?: boolean } = {}): MiddlewareHandler<AppEnv> {
  return async function requireAuth(c, next) {
    const header = c.req.header('authorization');
    // A header always wins; the `key` query parameter only where the route allows it (the replay handshake).
    const key = header === undefined && options.queryKey ? c.req.query('key') : /^Bearer +(\S+) *$/i.exec(header ?? '')?.[1];
    if (!key || !(await signIn(deps, c, key))) throw invalidKey();
    await next();
  };
}

/**
 * The same for clients that cannot send a header (Polymarket's own, docs/TIME-MACHINE.md §2): the key is
 * the `{key}` segment of the path. Unknown key → 401 with a message about the path.
 */
export function requirePathKey(deps: AuthDeps, base = '/v1/clob/<key>/at/<instant>/…'): MiddlewareHandler<AppEnv> {
  return async function requirePathKey(c, next) {
    if (!(await signIn(deps, c, c.req.param('key') ?? ''))) {
      throw new ApiError('invalid_api_key', `A valid API key is required in the path: ${base} (get a key with POST /v1/register).`);
    }
    await next();
  };
}

/** Looks `key` up; when an account has it, puts the account, effective plan and window start on the context. */
async function signIn(deps: AuthDeps, c: Context<AppEnv>, key: string): Promise<boolean> {
  if (!looksLikeApiKey(key, deps.config.API_KEY_PREFIX)) return false;
  const keyHash = hashApiKey(key);
  const account = await deps.accounts.findByKeyHash(keyHash);
  if (!account) return false;
  // Key regeneration swaps exactly this hash (compare-and-swap): a concurrent one that lost gets 401.
  c.set('keyHash', keyHash);
  const now = deps.clock.now();
  const window = windowAt(effectivePlan(account, now), now);
  c.set('account', account);
  c.set('effective', window.effective);
  c.set('earliestAllowed', window.earliestAllowed);
  c.set('latestPossible', window.latestPossible);
  return true;
}

/**
 * The daily limit on data endpoints (docs/API.md §2): one atomic check-and-count per request (one store
 * round trip). Every counted request carries X-RateLimit-*, whatever its outcome; the request that
 * would go over the limit is refused with 429 and does not count. An answer the service failed to give
 * (a 5xx, a stream it aborted: an export the disk refused) is given back once it has ended.
 */
export function dailyLimit(deps: AuthDeps): MiddlewareHandler<AppEnv> {
  return async function dailyLimit(c, next) {
    const now = deps.clock.now();
    const account = c.get('account');
    const headers = await countDataRequest(deps, account, c.get('effective'), now);
    for (const [name, value] of Object.entries(headers)) c.header(name, value);
    await next();
    // A handler that builds its own Response (a stream) drops the prepared headers: put them back.
    if (!c.res.headers.has('X-RateLimit-Limit')) for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
    whenResponseEnds(c, (outcome) => {
      if (outcome !== 'failed') return;
      deps.accounts.refundDaily(account.id, utcDay(now)).catch((err) => log.warn('failed request not given back', { error: errorText(err) }));
    });
  };
}

/**
 * Counts one data request of `account` today and returns the X-RateLimit-* headers its answer
 * carries; over the limit it throws the 429 (those headers plus Retry-After) and counts nothing.
 * The middleware above counts HTTP requests with it, the MCP endpoint each tool call (src/mcp).
 */
export async function countDataRequest(
  deps: AuthDeps,
  account: Pick<Account, 'id'>,
  effective: EffectivePlan,
  now = deps.clock.now(),
): Promise<Record<string, string>> {
  const { plan, rate_limit_daily: limit } = effective;
  const { allowed, count } = await deps.accounts.consumeDaily(account.id, utcDay(now), limit);
  const reset = nextUtcMidnight(now);
  const headers = {
    'X-RateLimit-Limit': String(limit),
    'X-RateLimit-Remaining': String(Math.max(0, limit - count)),
    'X-RateLimit-Reset': String(reset / 1000),
  };
  if (!allowed) {
    throw new ApiError(
      'rate_limit_exceeded',
      `Daily request limit (${limit}) exceeded.`,
      { limit, plan },
      {
        ...headers,
        'Retry-After': String(Math.ceil((reset - now) / 1000)),
      },
    );
  }
  return headers;
}
