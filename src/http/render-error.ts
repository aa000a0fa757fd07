import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { AccountNotFoundError, StoreUnavailableError } from '../accounts/errors.js';
import { InvoiceNotFoundError, IpnPayloadError, IpnSignatureError, PaymentProviderError, PaymentsUnavailableError } from '../billing/errors.js';
import { EngineUnavailableError, ExportWriteError } from '../clickhouse/errors.js';
import { errorText, log } from '../log.js';
import { redactPath } from '../redact.js';
import type { AppEnv } from './context.js';
import { ApiError, invalidParameter, notFound, serviceUnavailable } from './errors.js';
import { isClobTarget, isKalshiTarget } from './raw-response.js';
import { currentRequestScope } from './request-scope.js';

/**
 * The one place an error becomes a response (docs/API.md §6): route errors (ApiError) as they are, the
 * domain errors of the stores, billing and the engine mapped to their status and code, the
 * framework's own refusals (body not JSON, wrong Content-Type) in the contract's shape, anything
 * else a 500 that names the request id. `body` shapes the JSON: the `/v1` body by default; the
 * Polymarket-compatible routes pass Polymarket's `{"error": …}` (docs/TIME-MACHINE.md §2). Status and
 * headers (`Retry-After`) are the same either way.
 */
export function renderError(err: Error, c: Context<AppEnv>, body: (e: ApiError) => object = (e) => e.body()): Response {
  if (err instanceof ExportWriteError) {
    log.error('export failed', { request_id: c.get('requestId'), path: redactPath(c.req.path), status: 503, error: err.message });
  }
  const known = apiErrorOf(err);
  if (known) return send(c, known, body);
  if (c.req.raw.signal?.aborted) {
    // The client went away (its engine query was cancelled with it): nobody reads this answer. 499 is
    // nginx's "client closed request", so the access log and metrics tell cancellations from failures.
    log.info('client closed request', { request_id: c.get('requestId'), path: redactPath(c.req.path) });
    return new Response(null, { status: 499 });
  }
  const requestId = c.get('requestId');
  log.error('unhandled error', { request_id: requestId, error: errorText(err, 'stack') });
  return send(c, new ApiError('internal_error', 'Internal error; quote request_id when reporting it.', { request_id: requestId }), body);
}

/** Kalshi's error shape (docs/KALSHI.md §5), for its REST twin's answers and for paths that look like its base. */
export const kalshiErrorBody = (e: ApiError) => ({ error: { code: e.code, message: e.message, service: 'tickhouse' } });

/**
 * Unknown path, or a known path with a method it does not serve: the 404 body of docs/API.md §6, or
 * Polymarket's `{"error"}` for a path that looks like its compatible base but does not route (an
 * empty key segment, a dot segment, `//v1/clob/…`, `/V1/clob/…`). The path is echoed with any key masked.
 */
export function renderNotFound(c: Context<AppEnv>): Response {
  const error = notFound(`Not found: ${c.req.method} ${redactPath(c.req.path)}`);
  // The target as sent decides (`/v1/clob/../at/…` normalises to a path outside the base).
  const clob = currentRequestScope()?.clob || isClobTarget(c.req.path);
  if (clob) return send(c, error, (e) => ({ error: e.message }));
  return currentRequestScope()?.kalshi || isKalshiTarget(c.req.path) ? send(c, error, kalshiErrorBody) : send(c, error);
}

/** The ApiError an error stands for (an ApiError itself, or a mapped domain error), or null for anything else (a bug). */
export function apiErrorOf(err: Error): ApiError | null {
  if (err instanceof ApiError) return err;
  if (err instanceof EngineUnavailableError) return serviceUnavailable('ClickHouse');
  if (err instanceof StoreUnavailableError) return serviceUnavailable('The account store');
  if (err instanceof ExportWriteError) {
    return new ApiError(
      'service_unavailable',
      'The export file could not be written on the server (its disk refused it); retry shortly.',
      {},
      { 'Retry-After': '5' },
    );
  }
  // Only reachable when the account behind an authenticated key vanished mid-request: the key is dead.
  if (err instanceof AccountNotFoundError) return new ApiError('invalid_api_key', 'The account of this API key no longer exists.');
  if (err instanceof PaymentProviderError) return new ApiError('payment_provider_error', err.message);
  if (err instanceof PaymentsUnavailableError) return new ApiError('payments_unavailable', err.message);
  if (err instanceof IpnSignatureError) return new ApiError('invalid_signature', err.message);
  if (err instanceof IpnPayloadError) return invalidParameter(err.field, err.message);
  if (err instanceof InvoiceNotFoundError) return notFound(err.message);
  if (err instanceof HTTPException) {
    // Hono's JSON validator: a body that does not parse (400), or a Content-Type other than JSON (415).
    // docs/API.md §5 makes both a 400 invalid_parameter naming the body.
    if (err.status === 400) return invalidParameter('body', 'The request body must be a JSON object.');
    if (err.status === 415) return invalidParameter('body', 'The request body must be JSON sent with Content-Type: application/json.');
  }
  return null;
}

function send(c: Context<AppEnv>, error: ApiError, body: (e: ApiError) => object = (e) => e.body()): Response {
  return c.json(body(error), error.status, error.headers);
}
