import type { AccountStore } from './accounts/store.js';
import type { PaymentProvider } from './billing/provider.js';
import type { BookReader } from './book-history/port.js';
import type { Engine } from './clickhouse/engine.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';

/** Everything the HTTP app needs from outside; main.ts builds it, tests build their own. */
export interface AppDeps {
  config: Config;
  engine: Engine;
  accounts: AccountStore;
  clock: Clock;
  /** Built from config by the billing routes when absent (billing/index.ts createPaymentProvider); null = payments off. */
  payments?: PaymentProvider | null;
  /** Point-in-time books; createApp reads them straight from the engine when absent. */
  books?: BookReader;
  /**
   * True while the first-start demo load fills the store (main.ts): /readyz answers 503 `loading` and
   * /v1/markets says `meta.loading`, so nobody takes the growing counts for the dataset. Absent: never.
   */
  loading?: () => boolean;
}
