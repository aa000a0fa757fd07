import { type BookSide, OrderBook } from '../book/index.js';

/**
 * A seeded, deterministic generator of Polymarket market-channel frames for the demo dataset.
 *
 * Each market keeps one simulated L2 book for its first outcome; the second outcome's book is its
 * mirror (a bid at p is an ask at 1 − p), exactly as the exchange shows binary markets. A fair value
 * walks per minute, the book chases it through trades and quotes, and activity follows a daily cycle
 * with bursts. The output is frame text as received on the wire, so it goes through the same replay
 * path as a real capture.
 */

export interface DemoOptions {
  seed: number | string;
  /** Tick rows the normalizer will produce (each price_change item, book and trade is one). */
  ticks: number;
  markets?: number;
  days?: number;
  /** Time of the last frame (default: now). */
  endMs?: number;
}

/**
 * A Gamma `/markets` object: `outcomes` and `clobTokenIds` are JSON-encoded strings, as served; a v2
 * market names its outcome ids in `positionIds` (an array) instead, and a moneyline market names its two
 * sides in `marketSides` (docs/INGEST.md §1). A type alias, not an interface, so it is assignable to
 * index-signature types such as GammaMarket.
 */
export type DemoGammaMarket = {
  id: string;
  question: string;
  conditionId: string;
  slug: string;
  version: 'v1' | 'v2';
  outcome_type?: 'moneyline';
  sportsMarketType?: 'moneyline';
  marketSides?: { id: string; long: boolean; description: string; team: { name: string; abbreviation: string } }[];
  resolutionSource: string;
  endDate: string;
  liquidity: string;
  startDate: string;
  description: string;
  outcomes: string;
  outcomePrices: string;
  volume: string;
  createdAt: string;
  updatedAt: string;
  active: boolean;
  closed: boolean;
  archived: boolean;
  restricted: boolean;
  questionID: string;
  enableOrderBook: boolean;
  orderPriceMinTickSize: number;
  orderMinSize: number;
  volumeNum: number;
  liquidityNum: number;
  endDateIso: string;
  startDateIso: string;
  clobTokenIds?: string;
  positionIds?: string[];
  acceptingOrders: boolean;
  negRisk: boolean;
  spread: number;
  lastTradePrice: number;
  bestBid: number;
  bestAsk: number;
};

export interface DemoDataset {
  startMs: number;
  endMs: number;
  gammaMarkets: DemoGammaMarket[];
  /** Frame lines in time order; every call replays the same sequence. */
  frames(): Generator<string>;
}

export const DEMO_MARKET_LIMIT = 16;

const MINUTE = 60_000;
/** Sizes are held in millionths of a share so trades with 6 decimals stay exact. */
const MICRO = 1_000_000;

const HASH_POOL = 1024;
/** The largest size a resize gives a level, in multiples of its market's typical resting size. */
const MAX_RESTING_SCALES = 50;

/** sfc32: fast, small state, passes PractRand; seeded through a string hash so any seed works. */
class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  private hashes = '';
  private hashPos = HASH_POOL;

  constructor(seed: number | string, stream: string) {
    const text = `${seed}/${stream}`;
    let h = 1779033703 ^ text.length;
    const words: number[] = [];
    for (let i = 0; i < text.length; i++) {
      h = Math.imul(h ^ text.charCodeAt(i), 3432918353);
      h = (h << 13) | (h >>> 19);
    }
    for (let i = 0; i < 4; i++) {
      h = Math.imul(h ^ (h >>> 16), 2246822507);
      h = Math.imul(h ^ (h >>> 13), 3266489909);
      words.push((h ^= h >>> 16) >>> 0);
    }
    [this.a, this.b, this.c, this.d] = words;
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  next(): number {
    return this.u32() / 4294967296;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  normal(): number {
    return Math.sqrt(-2 * Math.log(1 - this.next())) * Math.cos(2 * Math.PI * this.next());
  }

  hex(chars: number): string {
    let s = '';
    while (s.length < chars) s += this.u32().toString(16).padStart(8, '0');
    return s.slice(0, chars);
  }

  /** 40 hex digits (a book hash). Drawn 1024 at a time through one Buffer hex conversion: per-call string building cost more than the rest of a frame. */
  hash(): string {
    if (this.hashPos === HASH_POOL) {
      const words = new Uint32Array(HASH_POOL * 5);
      for (let i = 0; i < words.length; i++) words[i] = this.u32();
      this.hashes = Buffer.from(words.buffer).toString('hex');
      this.hashPos = 0;
    }
    return this.hashes.slice(40 * this.hashPos, 40 * ++this.hashPos);
  }

  /** A uint256 token id as Polymarket prints it: 76–78 decimal digits, below 2^256. */
  tokenId(): string {
    const len = 76 + this.int(3);
    let s = len === 78 ? '10' : String(1 + this.int(9));
    while (s.length < len) s += String(this.int(10));
    return s;
  }
}

interface Template {
  question: (year: number) => string;
  description: string;
  outcomes: [string, string];
  /** A Protocol V2 market (Gamma `version` "v2", ids in `positionIds`); v1 when absent. */
  v2?: true;
  /** A moneyline market: its two sides, the long one first (name, abbreviation), which name its outcomes. */
  sides?: [[string, string], [string, string]];
  /** Starting probability of the first outcome. */
  p0: number;
  /** Markets near 0 or 1 trade on the 0.001 grid, as on the exchange. */
  fine: boolean;
  /** Years after the end date's year at which the market resolves. */
  resolvesIn: number;
}

const YES_NO: [string, string] = ['Yes', 'No'];
const UP_DOWN: [string, string] = ['Up', 'Down'];

/** Ordered so that the first eight already include both Up/Down markets and two on the 0.001 grid. */
const TEMPLATES: Template[] = [
  {
    question: (y) => `Will the Fed cut rates in March ${y + 1}?`,
    description:
      'This market will resolve to "Yes" if the FOMC announces a cut to the federal funds target range at its March meeting. Otherwise, it will resolve to ' +
      '"No".',
    outcomes: YES_NO,
    p0: 0.36,
    fine: false,
    resolvesIn: 1,
  },
  {
    question: () => 'Bitcoin above $150k on Dec 31?',
    description: 'This market will resolve to "Yes" if the Binance BTC/USDT 1-minute candle close at 12:00 ET on December 31 is above $150,000.',
    outcomes: YES_NO,
    v2: true,
    p0: 0.21,
    fine: false,
    resolvesIn: 0,
  },
  {
    question: (y) => `Will Gavin Newsom win the ${y + 2} Democratic presidential nomination?`,
    description: 'This market will resolve to "Yes" if the named individual wins and accepts the Democratic nomination for U.S. president.',
    outcomes: YES_NO,
    p0: 0.24,
    fine: false,
    resolvesIn: 2,
  },
  {
    question: (y) => `Will Ethereum reach $10,000 by December 31, ${y}?`,
    description: 'This market will resolve to "Yes" if any Binance ETH/USDT 1-minute candle has a final high at or above $10,000 before the end date.',
    outcomes: YES_NO,
    p0: 0.035,
    fine: true,
    resolvesIn: 0,
  },
  {
    question: () => 'Bitcoin Up or Down this week?',
    description: 'This market will resolve to "Up" if the BTC/USDT close at the end of the week is at or above the close at its start, and "Down" otherwise.',
    outcomes: UP_DOWN,
    p0: 0.52,
    fine: false,
    resolvesIn: 0,
  },
  {
    question: (y) => `Will OpenAI release GPT-6 before ${y + 1}?`,
    description: 'This market will resolve to "Yes" if OpenAI makes a model officially named GPT-6 publicly available before the date in the title.',
    outcomes: YES_NO,
    p0: 0.42,
    fine: false,
    resolvesIn: 1,
  },
  {
    question: () => 'Ethereum Up or Down today?',
    description: 'This market will resolve to "Up" if the ETH/USDT close at 12:00 ET today is at or above the close 24 hours earlier, and "Down" otherwise.',
    outcomes: UP_DOWN,
    p0: 0.49,
    fine: false,
    resolvesIn: 0,
  },
  {
    question: (y) => `US recession in ${y + 1}?`,
    description:
      'This market will resolve to "Yes" if the NBER announces a recession beginning in the listed year, or two consecutive quarters of negative real GDP ' +
      'growth are reported.',
    outcomes: YES_NO,
    p0: 0.19,
    fine: false,
    resolvesIn: 1,
  },
  {
    question: (y) => `Will the Lakers win the ${y + 1} NBA Finals?`,
    description: 'This market will resolve to "Yes" if the Los Angeles Lakers win the NBA Finals of the listed season.',
    outcomes: YES_NO,
    p0: 0.055,
    fine: true,
    resolvesIn: 1,
  },
  {
    question: () => 'Real Madrid vs. Bayern Munich: To Advance',
    description:
      'This market will resolve to the team that advances from the Champions League knockout tie, extra time and penalties included: Real Madrid (long) ' +
      'or Bayern Munich (short).',
    outcomes: YES_NO,
    v2: true,
    sides: [
      ['Real Madrid', 'RMA'],
      ['Bayern Munich', 'BAY'],
    ],
    p0: 0.15,
    fine: false,
    resolvesIn: 1,
  },
  {
    question: () => 'Will NVIDIA (NVDA) close above $240 end of January?',
    description:
      'This market will resolve to "Yes" if the official closing price for NVIDIA (NVDA) on the final trading day of January is higher than the listed price.',
    outcomes: YES_NO,
    p0: 0.62,
    fine: false,
    resolvesIn: 1,
  },
  {
    question: () => 'Gold above $4,000 on December 31?',
    description: 'This market will resolve to "Yes" if the COMEX gold front-month settlement on December 31 is above $4,000 per ounce.',
    outcomes: YES_NO,
    p0: 0.955,
    fine: true,
    resolvesIn: 0,
  },
  {
    question: () => 'US government shutdown before February 1?',
    description: 'This market will resolve to "Yes" if the U.S. federal government enters a lapse in appropriations before the listed date.',
    outcomes: YES_NO,
    p0: 0.28,
    fine: false,
    resolvesIn: 1,
  },
  {
    question: (y) => `Will SpaceX reach orbit with Starship in ${y + 1}?`,
    description: 'This market will resolve to "Yes" if a Starship upper stage completes at least one full orbit during the listed year.',
    outcomes: YES_NO,
    p0: 0.71,
    fine: false,
    resolvesIn: 1,
  },
  {
    question: (y) => `Will Taylor Swift release a new album in ${y + 1}?`,
    description: 'This market will resolve to "Yes" if Taylor Swift releases a new studio album during the listed year.',
    outcomes: YES_NO,
    p0: 0.33,
    fine: false,
    resolvesIn: 1,
  },
  {
    question: () => 'Solana above $300 on December 31?',
    description: 'This market will resolve to "Yes" if the Binance SOL/USDT 1-minute candle close at 12:00 ET on December 31 is above $300.',
    outcomes: YES_NO,
    p0: 0.028,
    fine: true,
    resolvesIn: 0,
  },
];

interface Market {
  conditionId: string;
  tokens: [string, string];
  /** Grid units per 1.0: 100 for a 0.01 tick, 1000 for 0.001. */
  n: number;
  /** The tick its books state at the start. */
  tickSize: string;
  /**
   * The first market's tick goes from 0.01 to 0.001 two thirds of the way through (a tick_size_change per
   * token); its prices stay on the 0.01 grid, which the finer tick still allows. Gamma states the tick
   * of today, 0.001: before the change the stored history says otherwise (docs/TIME-MACHINE.md §5).
   */
  tickChange: boolean;
  popularity: number;
  /** Typical resting size in micro-shares. */
  scale: number;
  /** Fair value in grid units and the band its walk stays in. */
  fair: number;
  lo: number;
  hi: number;
}

/**
 * The simulated book of a market's first outcome on its price grid (grid unit k = price k/n), held
 * in the book module's OrderBook. The empty-side rule (best bid 0, best ask 1) lands on grid units 0
 * and n.
 */
class Book {
  private readonly book = new OrderBook();
  /** Target spread in ticks, re-chosen now and then. */
  spread = 1;
  lastTrade = 0;

  constructor(readonly n: number) {}

  set(side: BookSide, k: number, size: number): void {
    this.book.apply(side, k / this.n, size);
  }

  /** Best bid in grid units (0 when none). */
  get bb(): number {
    return Math.round(this.book.bestBid() * this.n);
  }

  /** Best ask in grid units (n when none). */
  get ba(): number {
    return Math.round(this.book.bestAsk() * this.n);
  }

  count(side: BookSide): number {
    return this.book.count(side);
  }

  /** Size resting at grid unit k (0 when none, or off the grid). */
  size(side: BookSide, k: number): number {
    return this.book.sizeAt(side, k / this.n);
  }

  /** Grid unit of the d-th level from the top of a side (0 = best), or -1 when the side is shorter. */
  level(side: BookSide, d: number): number {
    const l = this.book.levels(side, d + 1)[d];
    return l ? Math.round(l.price * this.n) : -1;
  }

  /** A side's levels as [grid unit, size], best first. */
  grid(side: BookSide): [number, number][] {
    return this.book.levels(side).map((l) => [Math.round(l.price * this.n), l.size]);
  }
}

/** Builds the dataset description; frames are generated lazily by `frames()`. */
export function generateDemo(options: DemoOptions): DemoDataset {
  const marketCount = options.markets ?? 12;
  const days = options.days ?? 3;
  if (!Number.isInteger(marketCount) || marketCount < 1 || marketCount > DEMO_MARKET_LIMIT) throw new RangeError(`markets must be 1..${DEMO_MARKET_LIMIT}`);
  if (!(days > 0)) throw new RangeError('days must be positive');
  if (!Number.isInteger(options.ticks) || options.ticks < 0) throw new RangeError('ticks must be a non-negative integer');
  const endMs = Math.floor(options.endMs ?? Date.now());
  const minutes = Math.max(1, Math.round(days * 1440));
  const startMs = endMs - minutes * MINUTE;
  const year = new Date(endMs).getUTCFullYear();

  const rng = new Rng(options.seed, 'markets');
  const markets: Market[] = [];
  const gammaMarkets: DemoGammaMarket[] = [];
  for (const [i, t] of TEMPLATES.slice(0, marketCount).entries()) {
    const n = t.fine ? 1000 : 100;
    const fair = t.p0 * n * (1 + 0.08 * rng.normal());
    const lo = t.fine ? (t.p0 < 0.5 ? 4 : 880) : 12;
    const hi = t.fine ? (t.p0 < 0.5 ? 120 : 996) : 88;
    const m: Market = {
      conditionId: `0x${rng.hex(64)}`,
      tokens: [rng.tokenId(), rng.tokenId()],
      n,
      tickSize: t.fine ? '0.001' : '0.01',
      tickChange: i === 0 && !t.fine,
      popularity: Math.exp(0.9 * rng.normal()),
      scale: Math.round(Math.exp(Math.log(250) + 0.8 * rng.normal()) * 100) * (MICRO / 100),
      fair: Math.min(hi, Math.max(lo, fair)),
      lo,
      hi,
    };
    markets.push(m);
    gammaMarkets.push(gammaMarket(t, m, rng, year, startMs, endMs));
  }

  return {
    startMs,
    endMs,
    gammaMarkets,
    frames: () => emitFrames(options.seed, options.ticks, markets, startMs, minutes),
  };
}

function gammaMarket(t: Template, m: Market, rng: Rng, year: number, startMs: number, endMs: number): DemoGammaMarket {
  const question = t.question(year);
  const mid = Math.round(m.fair);
  const p = mid / m.n;
  const endDate = t.outcomes === UP_DOWN ? new Date(endMs + 2 * 86_400_000) : new Date(Date.UTC(year + t.resolvesIn, 11, 31));
  const created = new Date(startMs - (20 + rng.int(200)) * 86_400_000);
  const volume = Math.exp(Math.log(2e6) + 1.2 * rng.normal());
  const liquidity = volume / (20 + rng.int(80));
  const tick = m.tickChange ? 0.001 : 1 / m.n;
  const id = String(500_000 + rng.int(600_000));
  return {
    id,
    question,
    conditionId: m.conditionId,
    slug: `${question
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')}${rng.next() < 0.4 ? `-${100 + rng.int(900)}` : ''}`,
    version: t.v2 ? 'v2' : 'v1',
    ...(t.sides
      ? {
          outcome_type: 'moneyline' as const,
          sportsMarketType: 'moneyline' as const,
          marketSides: t.sides.map(([name, abbreviation], i) => ({ id: `${id}-${i}`, long: i === 0, description: name, team: { name, abbreviation } })),
        }
      : {}),
    resolutionSource: '',
    endDate: endDate.toISOString().replace('.000Z', 'Z'),
    liquidity: liquidity.toFixed(5),
    startDate: created.toISOString(),
    description: t.description,
    outcomes: gammaList(t.outcomes),
    outcomePrices: gammaList([p.toFixed(4), (1 - p).toFixed(4)]),
    volume: String(volume),
    createdAt: created.toISOString(),
    updatedAt: new Date(endMs).toISOString(),
    active: true,
    closed: false,
    archived: false,
    restricted: true,
    questionID: `0x${rng.hex(64)}`,
    enableOrderBook: true,
    orderPriceMinTickSize: tick,
    orderMinSize: 5,
    volumeNum: volume,
    liquidityNum: Number(liquidity.toFixed(5)),
    endDateIso: endDate.toISOString().slice(0, 10),
    startDateIso: created.toISOString().slice(0, 10),
    ...(t.v2 ? { positionIds: [...m.tokens] } : { clobTokenIds: gammaList(m.tokens) }),
    acceptingOrders: true,
    negRisk: m.n === 1000,
    spread: 2 / m.n,
    lastTradePrice: p,
    bestBid: (mid - 1) / m.n,
    bestAsk: (mid + 1) / m.n,
  };
}

/** A demo market's outcome token ids: `positionIds` of a v2 market, `clobTokenIds` of a v1 one. */
export function demoTokens(m: DemoGammaMarket): string[] {
  return m.positionIds ?? (JSON.parse(m.clobTokenIds ?? '[]') as string[]);
}

/** A JSON-encoded list spaced as Gamma serves it: `["Yes", "No"]`. */
function gammaList(items: readonly string[]): string {
  return `[${items.map((x) => JSON.stringify(x)).join(', ')}]`;
}

/**
 * The market that resolves at the end of the stream (market_resolved, the last frame): the daily
 * Ethereum Up/Down, to the outcome its price favours then. None when the demo has fewer markets.
 */
const RESOLVING = 6;

/**
 * The frame stream: initial dump, then minute by minute trades, quotes and periodic `book`s; a tick
 * size change (Market.tickChange) and one resolution at the end. The two kinds of market events draw
 * nothing from the generator: every other frame is what it was without them.
 */
function* emitFrames(seed: number | string, ticks: number, markets: Market[], startMs: number, minutes: number): Generator<string> {
  const rng = new Rng(seed, 'frames');
  const fair = markets.map((m) => m.fair);
  const books = markets.map((m, i) => initialBook(rng, m, fair[i]));
  const prices = new Map<number, string[]>();
  for (const m of markets) if (!prices.has(m.n)) prices.set(m.n, priceStrings(m.n));
  const ctx: Ctx = { rng, t: startMs, lines: [], tick: new Map(markets.map((m) => [m, m.tickSize])) };
  const tickChangeMinute = Math.floor((2 * minutes) / 3);

  yield `[${markets.map((m, i) => `${bookJson(ctx, m, books[i], 0, prices)},${bookJson(ctx, m, books[i], 1, prices)}`).join(',')}]`;

  // Book re-sends are hourly unless that would eat more than 5% of a small tick budget.
  const maxResends = Math.floor((0.05 * ticks) / (2 * markets.length));
  const interval = Math.max(60, Math.ceil(minutes / Math.max(1, maxResends)));
  const resendAt = markets.map(() => 1 + rng.int(interval - 1));
  const resendTicks = resendAt.reduce((sum, o) => sum + (o < minutes ? 2 * (Math.floor((minutes - 1 - o) / interval) + 1) : 0), 0);
  const flowBudget = Math.max(0, ticks - 2 * markets.length - resendTicks);

  const { weight, focus } = activity(rng, startMs, minutes, markets.length);
  let totalWeight = 0;
  for (let i = 0; i < minutes; i++) totalWeight += weight[i];
  const popularity = markets.map((m) => m.popularity);
  const popularityTotal = popularity.reduce((a, b) => a + b, 0);

  let flowDone = 0;
  let cumulative = 0;
  for (let i = 0; i < minutes; i++) {
    const minuteStart = startMs + i * MINUTE;
    if (i === tickChangeMinute) yield* tickSizeChanges(ctx, markets, minuteStart);
    cumulative += weight[i];
    const target = i === minutes - 1 ? flowBudget : Math.round((flowBudget * cumulative) / totalWeight);
    const focused = focus[i];
    for (let j = 0; j < markets.length; j++) {
      const m = markets[j];
      // News moves a market by a few cents at the start of its burst; 0.001-grid markets sit near
      // 0 or 1 where the same news moves the price less.
      const fine = m.n === 1000;
      let f = fair[j] + (fine ? 0.25 : 0.1) * rng.normal();
      if (focused === j && (i === 0 || focus[i - 1] !== j)) f += (rng.next() < 0.5 ? -1 : 1) * (2 + rng.int(5)) * (fine ? 3 : 1);
      fair[j] = f < m.lo ? 2 * m.lo - f : f > m.hi ? 2 * m.hi - f : f;
      if (rng.next() < 0.01) books[j].spread = 1 + rng.int(3);
    }
    const resends: number[] = [];
    for (let j = 0; j < markets.length; j++) if (i >= resendAt[j] && (i - resendAt[j]) % interval === 0) resends.push(j);
    const resendOffset = rng.int(MINUTE);

    const needed = target - flowDone;
    const clusterSize = focused >= 0 ? 4 : 1.6;
    const meanGap = MINUTE / (needed / (2.4 * clusterSize) + 1);
    let cursor = minuteStart;
    while (flowDone < target) {
      cursor = Math.min(minuteStart + MINUTE - 1, cursor + Math.floor(-Math.log(1 - rng.next()) * meanGap));
      if (resends.length && cursor >= minuteStart + resendOffset) yield* resendBooks(ctx, resends, markets, books, prices, minuteStart + resendOffset);
      const j = focused >= 0 && rng.next() < 0.7 ? focused : pickWeighted(rng, popularity, popularityTotal);
      const actions = 1 + Math.floor(-Math.log(1 - rng.next()) * (clusterSize - 1));
      ctx.t = cursor;
      for (let a = 0; a < actions && flowDone < target; a++) {
        flowDone += act(ctx, markets[j], books[j], fair[j], prices);
        yield* ctx.lines;
        ctx.lines.length = 0;
      }
    }
    if (resends.length) yield* resendBooks(ctx, resends, markets, books, prices, Math.max(ctx.t, minuteStart + resendOffset));
  }
  const resolving = markets[RESOLVING];
  if (resolving) yield resolution(resolving, fair[RESOLVING] >= resolving.n / 2 ? 0 : 1, startMs + minutes * MINUTE - 1);
}

/** A tick_size_change 0.01 → 0.001 for each token of the markets whose tick changes; their books state the new tick from then on. */
function* tickSizeChanges(ctx: Ctx, markets: Market[], t: number): Generator<string> {
  for (const m of markets) {
    if (!m.tickChange) continue;
    ctx.tick.set(m, '0.001');
    for (const token of m.tokens) {
      yield `{"event_type":"tick_size_change","asset_id":"${token}","market":"${m.conditionId}","old_tick_size":"0.01","new_tick_size":"0.001",` +
        `"timestamp":"${t}"}`;
    }
  }
}

/** A `market_resolved` as Polymarket sends it: both tokens, the winner and its outcome label. */
function resolution(m: Market, winner: 0 | 1, t: number): string {
  return (
    `{"event_type":"market_resolved","id":"${Number.parseInt(m.conditionId.slice(2, 7), 16)}","market":"${m.conditionId}",` +
    `"assets_ids":["${m.tokens[0]}","${m.tokens[1]}"],` +
    `"winning_asset_id":"${m.tokens[winner]}","winning_outcome":"${UP_DOWN[winner]}","timestamp":"${t}","tags":["crypto"]}`
  );
}

interface Ctx {
  rng: Rng;
  /** Timestamp of the frames being emitted. */
  t: number;
  /** Frames produced by the current action. */
  lines: string[];
  /** The tick each market's books state now (Market.tickChange moves one). */
  tick: Map<Market, string>;
}

function* resendBooks(ctx: Ctx, resends: number[], markets: Market[], books: Book[], prices: Map<number, string[]>, t: number): Generator<string> {
  ctx.t = t;
  for (const j of resends) {
    yield bookJson(ctx, markets[j], books[j], 0, prices);
    yield bookJson(ctx, markets[j], books[j], 1, prices);
  }
  resends.length = 0;
}

/** Minute weights: a daily cycle (quiet in the European morning), noise, and bursts on one market. */
function activity(rng: Rng, startMs: number, minutes: number, marketCount: number) {
  const weight = new Float64Array(minutes);
  const focus = new Int16Array(minutes).fill(-1);
  let burstLeft = 0;
  let burstMarket = -1;
  let burstGain = 1;
  for (let i = 0; i < minutes; i++) {
    const hour = ((startMs + i * MINUTE) % 86_400_000) / 3_600_000;
    const daily = 0.12 + 0.88 * (0.5 + 0.5 * Math.cos((2 * Math.PI * (hour - 19)) / 24)) ** 1.5;
    if (burstLeft === 0 && rng.next() < 1 / 150) {
      burstLeft = 2 + rng.int(14);
      burstMarket = rng.int(marketCount);
      burstGain = 4 + 16 * rng.next();
    }
    let w = daily * Math.exp(0.45 * rng.normal());
    if (burstLeft > 0) {
      w *= burstGain;
      focus[i] = burstMarket;
      burstLeft--;
    }
    weight[i] = w;
  }
  return { weight, focus };
}

function pickWeighted(rng: Rng, weights: number[], total: number): number {
  let x = rng.next() * total;
  for (let i = 0; i < weights.length; i++) if ((x -= weights[i]) < 0) return i;
  return weights.length - 1;
}

/** Size of a fresh resting order `depth` levels from the top, in micro-shares (0.01 share steps). */
function restingSize(rng: Rng, m: Market, depth: number): number {
  const shares = (m.scale / MICRO) * (1 + 0.25 * depth) * Math.exp(0.9 * rng.normal());
  const rounded = rng.next() < 0.4 ? Math.max(5, Math.round(shares)) : Math.max(5, Math.round(shares * 100) / 100);
  return Math.round(rounded * MICRO);
}

function initialBook(rng: Rng, m: Market, fair: number): Book {
  const b = new Book(m.n);
  b.spread = 1 + rng.int(3);
  const top = Math.max(1, Math.min(m.n - 1 - b.spread, Math.round(fair - b.spread / 2)));
  for (const side of ['bid', 'ask'] as const) {
    const isBid = side === 'bid';
    const best = isBid ? top : top + b.spread;
    const room = isBid ? best : m.n - best;
    const want = Math.min(room, 10 + rng.int(31));
    const contiguous = Math.min(want - 1, 4 + rng.int(9));
    let placed = 0;
    for (let d = 0; d < room && placed < want - 1; d++) {
      const k = isBid ? best - d : best + d;
      const extreme = isBid ? k === 1 : k === m.n - 1;
      const restLeft = room - d - 1;
      if (!extreme && (d < contiguous || rng.next() * restLeft < want - 1 - placed)) {
        b.set(side, k, restingSize(rng, m, d));
        placed++;
      }
    }
    // Deep liquidity at the extreme tick, as in real captures.
    b.set(side, isBid ? 1 : m.n - 1, restingSize(rng, m, 60));
  }
  b.lastTrade = top + (rng.next() < 0.5 ? 0 : b.spread);
  return b;
}

/**
 * One market event; pushes its frames to ctx.lines and returns the ticks they make (2 for a
 * mirrored price_change, 3 when a trade follows it).
 */
function act(ctx: Ctx, m: Market, b: Book, fair: number, prices: Map<number, string[]>): number {
  const { rng } = ctx;
  const wantBid = Math.max(1, Math.min(m.n - 1 - b.spread, Math.round(fair - b.spread / 2)));
  const wantAsk = wantBid + b.spread;
  const r = rng.next();
  if (r < 0.65) {
    // The book chases the fair value: stale quotes get hit or pulled, better ones appear.
    if (b.bb > wantBid && b.count('bid') > 1) {
      return rng.next() < 0.6 ? trade(ctx, m, b, { hit: 'bid', sweep: true }, prices) : change(ctx, m, b, { side: 'bid', k: b.bb, sizeMicro: 0 }, prices);
    }
    if (b.ba < wantAsk && b.count('ask') > 1) {
      return rng.next() < 0.6 ? trade(ctx, m, b, { hit: 'ask', sweep: true }, prices) : change(ctx, m, b, { side: 'ask', k: b.ba, sizeMicro: 0 }, prices);
    }
    if (b.bb < wantBid && b.bb + 1 < b.ba) return change(ctx, m, b, { side: 'bid', k: b.bb + 1, sizeMicro: restingSize(rng, m, 0) }, prices);
    if (b.ba > wantAsk && b.ba - 1 > b.bb) return change(ctx, m, b, { side: 'ask', k: b.ba - 1, sizeMicro: restingSize(rng, m, 0) }, prices);
  }
  const isBid = rng.next() < 0.5;
  const side: BookSide = isBid ? 'bid' : 'ask';
  const count = b.count(side);
  const kind = rng.next();
  if (kind < 0.3 && count > 1) return trade(ctx, m, b, { hit: side, sweep: false }, prices);
  if (kind < 0.42 && count < 40) {
    const best = isBid ? b.bb : b.ba;
    // New orders rest mostly a few ticks behind the top, which keeps the book dense where it trades.
    let away = 1 + Math.min(24, Math.floor(-Math.log(1 - rng.next()) * 6));
    while (away < 40 && b.size(side, isBid ? best - away : best + away) > 0) away++;
    const k = isBid ? best - away : best + away;
    if (k > 0 && k < m.n && b.size(side, k) === 0) return change(ctx, m, b, { side, k, sizeMicro: restingSize(rng, m, away) }, prices);
  }
  const depth = Math.min(count - 1, Math.floor(-Math.log(1 - rng.next()) * 3));
  const k = b.level(side, Math.max(0, depth));
  if (k < 0) {
    const top = isBid ? Math.max(1, Math.min(wantBid, b.ba - 1)) : Math.min(m.n - 1, Math.max(wantAsk, b.bb + 1));
    return change(ctx, m, b, { side, k: top, sizeMicro: restingSize(rng, m, 0) }, prices);
  }
  const extreme = k === 1 || k === m.n - 1;
  if (!extreme && depth >= 2 && count > 12 && rng.next() < 0.2) return change(ctx, m, b, { side, k, sizeMicro: 0 }, prices);
  // A resize is a multiplicative walk: bounded to 50 typical sizes, or over millions of ticks a level
  // that is never taken (the extreme ones) drifts to trillions of shares, past any exchange's sizes,
  // past what a backtesting engine can hold (NautilusTrader's Quantity), and past exact micro-shares.
  const walked = Math.round((b.size(side, k) * Math.exp(0.5 * rng.normal())) / 10_000) * 10_000;
  const resized = Math.max(MICRO, Math.min(MAX_RESTING_SCALES * m.scale, walked));
  return change(ctx, m, b, { side, k, sizeMicro: resized }, prices);
}

interface TradeOptions {
  /** The side whose best level the taker order hits: a buyer hits the ask, a seller the bid. */
  hit: BookSide;
  /** true: the order takes the whole level; false: 5 shares plus up to 80% of it, at most all. */
  sweep: boolean;
}

/** A taker order against the best level of a side: the level shrinks or goes, then the trade prints. */
function trade(ctx: Ctx, m: Market, b: Book, { hit, sweep }: TradeOptions, prices: Map<number, string[]>): number {
  const { rng } = ctx;
  const takerBuys = hit === 'ask';
  const k = takerBuys ? b.ba : b.bb;
  const resting = b.size(hit, k);
  let qty = sweep ? resting : Math.min(resting, 5 * MICRO + Math.round(resting * rng.next() * 0.8));
  if (rng.next() < 0.3 && qty < resting) qty -= rng.int(MICRO);
  const left = resting - qty < MICRO ? 0 : resting - qty;
  const ticks = change(ctx, m, b, { side: hit, k, sizeMicro: left }, prices);
  const filled = resting - left;
  b.lastTrade = k;
  // The print is reported on either outcome: buying the first at p is selling the second at 1 − p.
  const onFirst = rng.next() < 0.5;
  const p = prices.get(m.n)![onFirst ? k : m.n - k];
  const side = onFirst === takerBuys ? 'BUY' : 'SELL';
  ctx.lines.push(
    `{"asset_id":"${m.tokens[onFirst ? 0 : 1]}","event_type":"last_trade_price","fee_rate_bps":"0","market":"${m.conditionId}","price":"${p}",` +
      `"side":"${side}","size":"${size(filled)}","timestamp":"${ctx.t}"}`,
  );
  return ticks + 1;
}

interface LevelChange {
  /** A side of the first outcome's book; the mirrored change lands on the other side of the second's. */
  side: BookSide;
  /** Grid unit of the level. */
  k: number;
  /** The level's new size in micro-shares; 0 removes it. */
  sizeMicro: number;
}

/** Sets one level of the first outcome's book and emits the current-format mirrored price_change. */
function change(ctx: Ctx, m: Market, b: Book, { side, k, sizeMicro }: LevelChange, prices: Map<number, string[]>): number {
  b.set(side, k, sizeMicro);
  const px = prices.get(m.n)!;
  const s = size(sizeMicro);
  const [yesSide, noSide] = side === 'bid' ? ['BUY', 'SELL'] : ['SELL', 'BUY'];
  ctx.lines.push(
    `{"market":"${m.conditionId}","price_changes":[` +
      `{"asset_id":"${m.tokens[0]}","price":"${px[k]}","size":"${s}","side":"${yesSide}","hash":"${ctx.rng.hash()}","best_bid":"${px[b.bb]}",` +
      `"best_ask":"${px[b.ba]}"},` +
      `{"asset_id":"${m.tokens[1]}","price":"${px[m.n - k]}","size":"${s}","side":"${noSide}","hash":"${ctx.rng.hash()}","best_bid":"${px[m.n - b.ba]}",` +
      `"best_ask":"${px[m.n - b.bb]}"}` +
      `],"timestamp":"${ctx.t}","event_type":"price_change"}`,
  );
  return 2;
}

/** A `book` frame for outcome 0 or its mirror, levels listed best-last like real captures. */
function bookJson(ctx: Ctx, m: Market, b: Book, outcome: 0 | 1, prices: Map<number, string[]>): string {
  const px = prices.get(m.n)!;
  const bids: string[] = [];
  const asks: string[] = [];
  // Best last, as on the wire: the first outcome's bids ascending and asks descending; the mirror's
  // bids are the first outcome's asks at 1 − p, its asks the first outcome's bids.
  const level = (k: number, micro: number) => `{"price":"${px[k]}","size":"${size(micro)}"}`;
  const firstBids = b.grid('bid').reverse();
  const firstAsks = b.grid('ask').reverse();
  if (outcome === 0) {
    for (const [k, s] of firstBids) bids.push(level(k, s));
    for (const [k, s] of firstAsks) asks.push(level(k, s));
  } else {
    for (const [k, s] of firstAsks) bids.push(level(m.n - k, s));
    for (const [k, s] of firstBids) asks.push(level(m.n - k, s));
  }
  const last = (outcome === 0 ? b.lastTrade : m.n - b.lastTrade) / m.n;
  return (
    `{"market":"${m.conditionId}","asset_id":"${m.tokens[outcome]}","timestamp":"${ctx.t}","hash":"${ctx.rng.hash()}","bids":[${bids.join(',')}],` +
    `"asks":[${asks.join(',')}],"tick_size":"${ctx.tick.get(m)}","event_type":"book","last_trade_price":"${last.toFixed(3)}"}`
  );
}

/** Decimal text of k/n for every grid point: "0", "0.01" … "0.99", "1". */
function priceStrings(n: number): string[] {
  return Array.from({ length: n + 1 }, (_, k) => String(k / n));
}

function size(micro: number): string {
  return String(micro / MICRO);
}
