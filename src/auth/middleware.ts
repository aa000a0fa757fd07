import type { MiddlewareHandler } from 'hono';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { ApiError } from '../http/errors.js';

/** Bearer key → account and effective plan on the context; 401 otherwise. (Owned by the accounts work.) */
export function requireAuth(_deps: AppDeps): MiddlewareHandler<AppEnv> {
  return async function requireAuth() {
    throw new ApiError('invalid_api_key', 'A valid API key is required: Authorization: Bearer <key>.');
  };
}

/** Counts data requests per account per UTC day; 429 past the plan's limit. (Owned by the accounts work.) */
export function dailyLimit(_deps: AppDeps): MiddlewareHandler<AppEnv> {
  return async function dailyLimit(_c, next) {
    await next();
  };
}
