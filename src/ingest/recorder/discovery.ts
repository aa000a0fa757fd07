import type { MarketRow } from '../../clickhouse/rows.js';
import { errorText, log } from '../../log.js';
import { discoverActiveMarkets, lookupMarkets } from './gamma-client.js';
import type { RecorderOptions } from './options.js';

type DiscoveryOptions = Pick<RecorderOptions, 'gammaUrl' | 'assets' | 'maxAssets' | 'discoveryIntervalMs'>;

/** Upper bound of the wait between two first-discovery attempts. */
const MAX_RETRY_MS = 60_000;

/**
 * The recorder's market metadata from Gamma: with `--active` every active market (what to
 * subscribe), with `--assets` the given tokens' markets (their outcome labels). Asked once at start,
 * then every `discoveryIntervalMs`; each answer goes to `onMarkets` with only the rows that changed.
 */
export class MarketDiscovery {
  /** asset_id → the row last passed on, as JSON: a refresh re-emits a market only when Gamma changed it. */
  private readonly known = new Map<string, string>();
  private retry: NodeJS.Timeout | null = null;
  private refresh: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly options: DiscoveryOptions,
    private readonly onMarkets: (changed: MarketRow[]) => void,
  ) {}

  /**
   * The first discovery, awaited once. When Gamma fails it resolves anyway and keeps asking with
   * backoff: a process embedding the recorder (the API) must not hang on Gamma.
   */
  first(): Promise<void> {
    return this.discoverOrRetry(0);
  }

  private async discoverOrRetry(attempt: number): Promise<void> {
    try {
      await this.discover();
    } catch (err) {
      const wait = Math.min(MAX_RETRY_MS, 1000 * 2 ** attempt);
      const msg =
        this.options.assets === null
          ? 'Gamma discovery failed: nothing to subscribe to yet; retrying'
          : 'Gamma metadata unavailable: ticks are labelled UNKNOWN until it answers; retrying';
      log.warn(msg, { error: errorText(err), retry_in_ms: wait });
      if (!this.stopped) this.retry = setTimeout(() => void this.discoverOrRetry(attempt + 1), wait);
    }
  }

  /** Asks again every `discoveryIntervalMs` (0: never); a failed refresh keeps what is known. */
  startRefresh(): void {
    if (this.options.discoveryIntervalMs <= 0) return;
    this.refresh = setInterval(() => {
      this.discover().catch((err) => log.warn('Gamma refresh failed; keeping the current subscriptions', { error: errorText(err) }));
    }, this.options.discoveryIntervalMs);
  }

  stop(): void {
    this.stopped = true;
    if (this.refresh) clearInterval(this.refresh);
    if (this.retry) clearTimeout(this.retry);
  }

  private async discover(): Promise<void> {
    const { gammaUrl, assets, maxAssets } = this.options;
    const rows = assets === null ? await discoverActiveMarkets(gammaUrl, maxAssets) : await lookupMarkets(gammaUrl, assets);
    this.onMarkets(rows.filter((r) => this.changed(r)));
  }

  private changed(row: MarketRow): boolean {
    const key = JSON.stringify(row);
    if (this.known.get(row.asset_id) === key) return false;
    this.known.set(row.asset_id, key);
    return true;
  }
}
