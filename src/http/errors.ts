/**
 * The closed list of API error codes (docs/API.md §6) and the one exception type routes and middleware
 * throw. render-error.ts renders every ApiError (and maps every domain error) in one place.
 */
export const ERROR_STATUS = {
  invalid_parameter: 400,
  /** HTTP the server could not read: a request-target or Host that is not a URL, broken framing (http-server.ts). */
  bad_request: 400,
  invalid_api_key: 401,
  invalid_signature: 401,
  data_access_denied: 403,
  not_found: 404,
  /** A method the MCP endpoint does not serve (it keeps no session: POST only, docs/MCP.md §1). */
  method_not_allowed: 405,
  /** A request not received completely within the server's requestTimeout (slow or stalled client). */
  request_timeout: 408,
  /** An `Expect` header other than `100-continue`, which is the only expectation this server meets. */
  expectation_failed: 417,
  payload_too_large: 413,
  upgrade_required: 426,
  /** Request headers over 16 KiB (or request line and headers over 64 KiB), refused before any route (http-server.ts). */
  header_too_large: 431,
  rate_limit_exceeded: 429,
  too_many_registrations: 429,
  /** More heavy requests (exports, Tardis files and slices, replays) at once than the plan runs (src/auth/heavy-requests.ts). */
  too_many_concurrent_requests: 429,
  internal_error: 500,
  payment_provider_error: 502,
  service_unavailable: 503,
  payments_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode];

export class ApiError extends Error {
  readonly status: ErrorStatus;
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra members of `detail` (e.g. `param`, `plan`, `earliest_allowed`, `limit`). */
    readonly extra: Record<string, unknown> = {},
    /** Extra response headers (e.g. `Retry-After`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }

  /** The JSON body: `{"detail": {"error", "message", ...extra}}`; 404 carries only `message`. */
  body(): { detail: Record<string, unknown> } {
    if (this.code === 'not_found') return { detail: { message: this.message } };
    return { detail: { error: this.code, message: this.message, ...this.extra } };
  }
}

export const invalidParameter = (param: string, message: string) => new ApiError('invalid_parameter', message, { param });

export const notFound = (message: string) => new ApiError('not_found', message);

/** A dependency (ClickHouse, the account store) cannot be reached: 503, the client may retry. */
export const serviceUnavailable = (what: string, retryAfterSeconds = 5) =>
  new ApiError('service_unavailable', `${what} is unavailable; retry shortly.`, {}, { 'Retry-After': String(retryAfterSeconds) });
