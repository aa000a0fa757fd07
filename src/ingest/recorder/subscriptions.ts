import { log } from '../../log.js';
import type { MarketFeed } from './market-feed.js';
import type { RecorderOptions } from './options.js';

/**
 * With `--active`, the recorder follows new markets: every market row that passes through the
 * normalizer (from Gamma or from a `new_market` event) names an asset to subscribe. The assets are
 * queued and subscribed once the frame or the Gamma answer is done: subscribing writes capture
 * records, which go through the normalizer, and the normalizer may still be inside that frame.
 */
export class PendingSubscriptions {
  private readonly queue = new Set<string>();

  constructor(
    private readonly feed: MarketFeed,
    private readonly options: Pick<RecorderOptions, 'assets' | 'maxAssets'>,
  ) {}

  /** A market row of `asset` was stored. */
  onMarket(asset: string): void {
    if (this.options.assets === null && !this.feed.isSubscribed(asset)) this.queue.add(asset);
  }

  /** Subscribes the queued assets, up to --max-assets in all; `announce` logs the new ones. */
  subscribe(announce: boolean): void {
    if (this.queue.size === 0) return;
    let assets = [...this.queue];
    this.queue.clear();
    if (this.options.maxAssets > 0) assets = assets.slice(0, Math.max(0, this.options.maxAssets - this.feed.stats().assets));
    const added = this.feed.subscribe(assets);
    if (added && announce) log.info('recorder subscribed new assets', { added, assets: this.feed.stats().assets });
  }
}
