import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request a piece of work belongs to, carried through every callback and promise it starts
 * (AsyncLocalStorage), so an error nobody caught (see process-guard.ts) can still be logged with
 * the request's id and answered instead of taking the process down.
 */
export interface RequestScope {
  /** Set by the requestId middleware (or the upgrade handler) once the id is known. */
  requestId?: string;
  /** The request is under Polymarket's compatible base: errors take its `{"error"}` shape. */
  clob?: boolean;
  /** The request is under Kalshi's REST twin (docs/KALSHI.md §5): a 404 takes Kalshi's `{"error":{…}}` shape. */
  kalshi?: boolean;
  /** Answers the request with a 500 if it has not been answered yet, else cuts its connection. */
  fail(): void;
}

const storage = new AsyncLocalStorage<RequestScope>();

export function runInRequestScope<T>(scope: RequestScope, work: () => T): T {
  return storage.run(scope, work);
}

export function currentRequestScope(): RequestScope | undefined {
  return storage.getStore();
}
