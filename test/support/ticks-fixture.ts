import type { AppDeps } from '../../src/deps.js';
import { replayLines } from '../../src/ingest/frame-files.js';
import type { GammaMarket } from '../../src/ingest/gamma.js';

export { type DataApp as TicksApp, startDataApp as startTicksApp } from './data-app.js';

/** Raw Polymarket frames whose expected ticks are computed here, independently of the normalizer. */
export interface ExpectedTick {
  asset_id: string;
  t: number;
  event: 'price_change' | 'book' | 'last_trade_price';
  side: string;
  best_bid: number;
  best_ask: number;
  price: number;
  size: number;
}

export interface GeneratedStream {
  lines: string[];
  markets: GammaMarket[];
  /** Every tick in arrival order (which is also (t, arrival) order: t never decreases per asset). */
  ticks: ExpectedTick[];
}

/** A small deterministic PRNG, so failures reproduce. */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const cents = (n: number) => Math.round(n * 100) / 100;

export interface StreamSpec {
  assets: { asset_id: string; market: string; outcome: string; question: string }[];
  start: number;
  /** Events (frames) per asset. */
  events: number;
  /** Mean ms between frames; many steps are 0, so equal timestamps are common. */
  meanGapMs: number;
  seed: number;
}

/**
 * Raw frames: a `book` first, then current-generation `price_change` frames of 1–3 items (one `t`
 * for all items), `last_trade_price` frames and occasional fresh `book`s, interleaved across assets.
 * The book is tracked here so best bid/ask are known for every tick.
 */
export function generateStream(spec: StreamSpec): GeneratedStream {
  const rnd = prng(spec.seed);
  const lines: string[] = [];
  const ticks: ExpectedTick[] = [];
  const markets = new Map<string, GammaMarket & { tokens: string[]; labels: string[] }>();
  for (const a of spec.assets) {
    const m = markets.get(a.market) ?? {
      conditionId: a.market,
      question: a.question,
      slug: a.question.toLowerCase().replace(/\W+/g, '-'),
      tokens: [],
      labels: [],
    };
    m.tokens.push(a.asset_id);
    m.labels.push(a.outcome);
    markets.set(a.market, m);
  }
  const books = new Map<string, { bids: Map<number, number>; asks: Map<number, number> }>();
  const best = (id: string) => {
    const b = books.get(id)!;
    return { best_bid: b.bids.size ? Math.max(...b.bids.keys()) : 0, best_ask: b.asks.size ? Math.min(...b.asks.keys()) : 1 };
  };
  let t = spec.start;
  for (let i = 0; i < spec.events * spec.assets.length; i++) {
    const a = spec.assets[i % spec.assets.length];
    const side = a.outcome.toUpperCase();
    const r = rnd();
    if (r < 0.5) t += 0;
    else t += Math.floor(rnd() * spec.meanGapMs * 4);
    const ts = String(t);
    const fresh = !books.has(a.asset_id) || rnd() < 0.01;
    if (fresh) {
      const mid = cents(0.2 + rnd() * 0.6);
      const bids = new Map<number, number>();
      const asks = new Map<number, number>();
      for (let k = 1; k <= 5; k++) {
        bids.set(cents(mid - k / 100), cents(10 + rnd() * 100));
        asks.set(cents(mid + k / 100), cents(10 + rnd() * 100));
      }
      books.set(a.asset_id, { bids, asks });
      const level = ([price, size]: [number, number]) => ({ price: String(price), size: String(size) });
      lines.push(
        JSON.stringify({
          event_type: 'book',
          market: a.market,
          asset_id: a.asset_id,
          timestamp: ts,
          hash: `h${i}`,
          bids: [...bids].map(level),
          asks: [...asks].map(level),
        }),
      );
      ticks.push({ asset_id: a.asset_id, t, event: 'book', side, ...best(a.asset_id), price: 0, size: 0 });
    } else if (rnd() < 0.15) {
      const b = best(a.asset_id);
      const price = cents(b.best_bid + 0.01);
      const size = cents(1 + rnd() * 50);
      lines.push(
        JSON.stringify({
          event_type: 'last_trade_price',
          market: a.market,
          asset_id: a.asset_id,
          price: String(price),
          side: 'BUY',
          size: String(size),
          fee_rate_bps: '0',
          timestamp: ts,
        }),
      );
      ticks.push({ asset_id: a.asset_id, t, event: 'last_trade_price', side, ...b, price, size });
    } else {
      const items = [];
      const n = 1 + Math.floor(rnd() * 3);
      for (let k = 0; k < n; k++) {
        const book = books.get(a.asset_id)!;
        const buy = rnd() < 0.5;
        const b = best(a.asset_id);
        const from = buy ? b.best_bid || 0.5 : b.best_ask === 1 ? 0.5 : b.best_ask;
        const price = cents(Math.min(0.99, Math.max(0.01, from + Math.round((rnd() - (buy ? 0.6 : 0.4)) * 3) / 100)));
        const size = rnd() < 0.25 ? 0 : cents(1 + rnd() * 200);
        const levels = buy ? book.bids : book.asks;
        if (size === 0) levels.delete(price);
        else levels.set(price, size);
        const after = best(a.asset_id);
        items.push({
          asset_id: a.asset_id,
          price: String(price),
          size: String(size),
          side: buy ? 'BUY' : 'SELL',
          hash: `h${i}.${k}`,
          best_bid: String(after.best_bid),
          best_ask: String(after.best_ask),
        });
        ticks.push({ asset_id: a.asset_id, t, event: 'price_change', side, ...after, price, size });
      }
      lines.push(JSON.stringify({ event_type: 'price_change', market: a.market, timestamp: ts, price_changes: items }));
    }
  }
  const gamma = [...markets.values()].map(({ tokens, labels, ...m }) => ({ ...m, outcomes: JSON.stringify(labels), clobTokenIds: JSON.stringify(tokens) }));
  return { lines, markets: gamma, ticks };
}

export async function replayStream(deps: AppDeps, stream: GeneratedStream, sourceId: string): Promise<void> {
  await replayLines(deps.engine, stream.lines, { sourceId, markets: stream.markets });
}

/** The JSON body of a response, asserting its status first so failures show the error body. */
export async function json<T = any>(res: Response, status = 200): Promise<T> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}
