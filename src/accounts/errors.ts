/**
 * What an account store reports in domain terms; http/render-error.ts decides what each becomes on
 * the wire. Driver errors (Redis, the file system) never leave a store raw.
 */

/** The store's backend cannot be reached or did not persist a change; the caller may retry. */
export class StoreUnavailableError extends Error {
  constructor(options?: { cause?: unknown }) {
    super('The account store is unavailable; retry shortly.', options);
    this.name = 'StoreUnavailableError';
  }
}

/** A change addressed an account id the store does not hold. */
export class AccountNotFoundError extends Error {
  constructor(readonly accountId: string) {
    super(`No account ${accountId}`);
    this.name = 'AccountNotFoundError';
  }
}
