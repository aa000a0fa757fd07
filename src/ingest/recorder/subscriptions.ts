import { log } from '../../log.js';
import type { MarketFeed } from './market-feed.js';
import type { RecorderOptions } from './options.js';

/**
 * Which tokens the recorder follows. With `--all`, every live token: the markets Gamma lists as live
 * and the ones a `new_market` event announces join; a market that resolves (`market_resolved`) leaves,
 * and so does one a complete Gamma walk no longer lists after listing it before (closed, archived). With
 * `--assets`, exactly the given tokens, for the whole run.
 *
 * Changes are queued and applied once the frame or the Gamma answer is done: subscribing writes capture
 * records, which go through the normalizer, and the normalizer may still be inside that frame.
 */
export class Subscriptions {
  /** The tokens the recorder should record now (Gamma's live ones and announced ones; the given ones). */
  private readonly wanted = new Set<string>();
  /** Tokens some complete Gamma walk listed: only those can leave by a later walk's silence. */
  private readonly listedByGamma = new Set<string>();
  /** Tokens whose market resolved in this run: a Gamma list that still names them does not bring them back. */
  private readonly resolved = new Set<string>();
  private readonly joining = new Set<string>();
  private readonly leaving = new Set<string>();

  constructor(
    private readonly feed: MarketFeed,
    private readonly options: Pick<RecorderOptions, 'assets' | 'maxAssets'>,
  ) {
    for (const a of options.assets ?? []) this.want(a);
  }

  /** How many tokens the recorder should be recording (`live` on the status line). */
  live(): number {
    return this.wanted.size;
  }

  /** A market row of `asset` was stored (Gamma, or a `new_market` event): with `--all` it joins. */
  onMarket(asset: string): void {
    if (this.options.assets === null && !this.resolved.has(asset)) this.want(asset);
  }

  /** The market of these tokens resolved (`market_resolved`): with `--all` they leave. */
  onResolved(assets: readonly string[]): void {
    if (this.options.assets !== null) return;
    for (const a of assets) {
      this.resolved.add(a);
      this.unwant(a);
    }
  }

  /** A complete Gamma walk (`--all`): tokens it listed before and lists no more leave. */
  onLiveList(live: ReadonlySet<string>): void {
    for (const a of this.listedByGamma) if (!live.has(a)) this.unwant(a);
    this.listedByGamma.clear();
    for (const a of live) this.listedByGamma.add(a);
  }

  /** Applies the queued changes: leaves first (they free room on sockets), then joins up to --max-assets in all; `announce` logs them. */
  apply(announce: boolean): void {
    if (this.leaving.size > 0) {
      const left = this.feed.unsubscribe(this.leaving);
      this.leaving.clear();
      if (left && announce) log.info('recorder left resolved or delisted assets', { left, assets: this.feed.stats().assets });
    }
    if (this.joining.size === 0) return;
    let assets = [...this.joining];
    this.joining.clear();
    if (this.options.maxAssets > 0) assets = assets.slice(0, Math.max(0, this.options.maxAssets - this.feed.stats().assets));
    const added = this.feed.subscribe(assets);
    if (added && announce) log.info('recorder subscribed new assets', { added, assets: this.feed.stats().assets });
  }

  private want(asset: string): void {
    if (this.wanted.has(asset)) return;
    this.wanted.add(asset);
    this.leaving.delete(asset);
    if (!this.feed.isSubscribed(asset)) this.joining.add(asset);
  }

  private unwant(asset: string): void {
    if (!this.wanted.delete(asset)) return;
    this.joining.delete(asset);
    if (this.feed.isSubscribed(asset)) this.leaving.add(asset);
  }
}
