import type { MarketRow, ProtocolRow } from '../../clickhouse/rows.js';
import { errorText, log } from '../../log.js';
import { type GammaProblem, logGammaProblems } from '../gamma.js';
import { discoverLiveMarkets, lookupMarkets } from './gamma-client.js';
import type { RecorderOptions } from './options.js';

type DiscoveryOptions = Pick<RecorderOptions, 'gammaUrl' | 'assets' | 'maxAssets' | 'discoveryIntervalMs'>;

/** Upper bound of the wait between two first-discovery attempts. */
const MAX_RETRY_MS = 60_000;

/** What one Gamma answer brought. */
export interface Discovered {
  /** Token rows that changed since the last answer (new tokens included). */
  changed: MarketRow[];
  /** The protocol versions of those tokens. */
  protocols: ProtocolRow[];
  /**
   * With `--all`: every live token, when the walk saw every page (null when it stopped early at
   * --max-assets): tokens subscribed but no longer in it have left. With `--assets`: null.
   */
  live: Set<string> | null;
}

/**
 * The recorder's market metadata from Gamma: with `--all` every live market (what to subscribe), with
 * `--assets` the given tokens' markets (their outcome labels). Asked once at start, then every
 * `discoveryIntervalMs`; each answer goes to `onDiscovered` with only the rows that changed.
 */
export class MarketDiscovery {
  /** asset_id → the row last passed on, as JSON: a refresh re-emits a market only when Gamma changed it. */
  private readonly known = new Map<string, string>();
  /** Problems already logged (market and kind): a refresh every few minutes does not repeat them. */
  private readonly reported = new Set<string>();
  private retry: NodeJS.Timeout | null = null;
  private refresh: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly options: DiscoveryOptions,
    private readonly onDiscovered: (discovered: Discovered) => void,
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
    const answer = assets === null ? await discoverLiveMarkets(gammaUrl, maxAssets) : { ...(await lookupMarkets(gammaUrl, assets)), complete: false };
    if (this.stopped) return;
    this.report(answer.problems);
    const changed: MarketRow[] = [];
    const protocols: ProtocolRow[] = [];
    answer.rows.forEach((row, i) => {
      const key = JSON.stringify([row, answer.protocols[i].protocol_version]);
      if (this.known.get(row.asset_id) === key) return;
      this.known.set(row.asset_id, key);
      changed.push(row);
      protocols.push(answer.protocols[i]);
    });
    const live = assets === null && answer.complete ? new Set(answer.rows.map((r) => r.asset_id)) : null;
    this.onDiscovered({ changed, protocols, live });
  }

  private report(problems: readonly GammaProblem[]): void {
    const fresh = problems.filter((p) => {
      const key = `${p.kind}\u0000${p.market}\u0000${p.slug}`;
      if (this.reported.has(key)) return false;
      this.reported.add(key);
      return true;
    });
    if (fresh.length > 0) logGammaProblems(fresh, 'recorder discovery');
  }
}
