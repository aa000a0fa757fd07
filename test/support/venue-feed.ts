import type { PolymarketWsServer } from './polymarket-ws-server.js';

/**
 * A whole venue for the local feed (polymarket-ws-server.ts, gamma-server.ts): Gamma markets of two
 * tokens each, one market in five a v2 market (positionIds), the rest v1 (clobTokenIds), and a generator
 * of market-channel events for their tokens, in Polymarket's wire shapes (docs/INGEST.md §1): `price_change`
 * frames of one asset's items (1 to `maxItems` levels), `last_trade_price` frames. Deterministic for a
 * seed. Events are counted per item: a price_change frame of 3 items is 3 events (3 ticks when stored).
 */
export interface VenueMarket {
  conditionId: string;
  tokens: [string, string];
  gamma: Record<string, unknown>;
}

/** `markets` markets (2 tokens each), ids unique per `seed`: 77-digit token ids, 64-hex condition ids. */
export function venueMarkets(markets: number, seed = 1): VenueMarket[] {
  const out: VenueMarket[] = [];
  for (let i = 0; i < markets; i++) {
    const id = (n: number) => `${seed % 9 || 9}${String(i).padStart(9, '0')}${String(n).padStart(67, '0')}`;
    const tokens: [string, string] = [id(1), id(2)];
    const conditionId = `0x${(seed * 1_000_003 + i).toString(16).padStart(64, '0')}`;
    const v2 = i % 5 === 4;
    out.push({
      conditionId,
      tokens,
      gamma: {
        id: String(100_000 + i),
        conditionId,
        question: `Venue market ${i}?`,
        slug: `venue-market-${i}`,
        version: v2 ? 'v2' : 'v1',
        outcomes: '["Yes", "No"]',
        ...(v2 ? { positionIds: tokens } : { clobTokenIds: JSON.stringify(tokens) }),
        active: true,
        closed: false,
        enableOrderBook: true,
        orderPriceMinTickSize: 0.01,
        orderMinSize: 5,
        updatedAt: '2026-11-01T00:00:00.000Z',
      },
    });
  }
  return out;
}

/** A `book` event of 5 levels a side around 0.50. */
export function venueBook(market: VenueMarket, asset: string, t: number): Record<string, unknown> {
  const levels = (from: number) => Array.from({ length: 5 }, (_, k) => ({ price: ((from + k) / 100).toFixed(2), size: String(100 + 10 * k) }));
  return { event_type: 'book', market: market.conditionId, asset_id: asset, timestamp: String(t), hash: '', bids: levels(44), asks: levels(51).reverse() };
}

export interface VenueCounts {
  price_change: number;
  last_trade_price: number;
  frames: number;
}

/** Events of the venue's tokens, sent through the server's fast path; `counts` is what connections were sent. */
export class VenueFeed {
  readonly counts: VenueCounts = { price_change: 0, last_trade_price: 0, frames: 0 };
  private state: number;
  private readonly assets: { asset: string; market: string }[];

  constructor(
    private readonly server: PolymarketWsServer,
    markets: readonly VenueMarket[],
    seed = 1,
    private readonly maxItems = 3,
  ) {
    this.state = (seed * 2654435761) >>> 0 || 1;
    this.assets = markets.flatMap((m) => m.tokens.map((asset) => ({ asset, market: m.conditionId })));
  }

  /** Gives every token its initial-dump book. */
  setBooks(markets: readonly VenueMarket[], t: number): void {
    for (const m of markets) for (const a of m.tokens) this.server.setBook(venueBook(m, a, t));
  }

  /**
   * Sends frames until `events` events have gone out (the last frame may carry a few more), at exchange
   * time `t`; returns the events sent. A frame whose asset no connection serves is not counted.
   */
  send(events: number, t: number): number {
    let sent = 0;
    while (sent < events) {
      const { asset, market } = this.assets[this.next() % this.assets.length];
      const r = this.next();
      if (r % 8 === 0) {
        const side = r & 16 ? 'BUY' : 'SELL';
        const text =
          `{"event_type":"last_trade_price","asset_id":"${asset}","market":"${market}","price":"0.${45 + (r % 10)}","side":"${side}",` +
          `"size":"${1 + (r % 500)}","fee_rate_bps":"0","timestamp":"${t}"}`;
        if (this.server.publishFor(asset, text, 'last_trade_price', 1)) {
          this.counts.last_trade_price++;
          this.counts.frames++;
          sent++;
        }
        continue;
      }
      const n = 1 + (r % this.maxItems);
      let items = '';
      for (let k = 0; k < n; k++) {
        const bid = (r >>> (k + 3)) & 1;
        const cents = bid ? 40 + (((r >>> 5) + k) % 10) : 51 + (((r >>> 7) + k) % 10);
        const size = (r >>> 9) % 7 === 0 ? 0 : 10 + (((r >>> 11) + 37 * k) % 990);
        items +=
          `${k ? ',' : ''}{"asset_id":"${asset}","price":"0.${cents}","size":"${size}","side":"${bid ? 'BUY' : 'SELL'}",` +
          `"hash":"","best_bid":"0.49","best_ask":"0.51"}`;
      }
      const text = `{"market":"${market}","price_changes":[${items}],"timestamp":"${t}","event_type":"price_change"}`;
      if (this.server.publishFor(asset, text, 'price_change', n)) {
        this.counts.price_change += n;
        this.counts.frames++;
        sent += n;
      }
    }
    return sent;
  }

  /** xorshift32: cheap and deterministic. */
  private next(): number {
    let x = this.state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.state = x >>> 0;
    return this.state;
  }
}
