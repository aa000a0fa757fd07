import type { Engine } from '../clickhouse/engine.js';
import { LoopBreaks } from '../event-loop.js';
import { PageDecoder, ReplayPage } from './replay-page.js';
import { bookEvent, changeItem, isMarketEvent, priceChange, type ReplayRow, tradeEvent } from './wire.js';

/**
 * The replay's read of the store: every stored event of the subscribed assets from `since` to `to`,
 * merged across assets in (t, seq) order — the arrival order, as seq rises with arrival within a
 * source (asset_id breaks the tie two sources could make). `price_change` and `last_trade_price`
 * come from ticks; a `book` needs its levels, so it comes from the exchange snapshot stored with its
 * tick (book_snapshots, same t and seq); the other market-channel events come from market_events, whose
 * seq is from the same arrival counter (clickhouse/012_market_events.sql).
 *
 * The engine merges the assets, one time window at a time. One query over the whole range cannot
 * stream: `asset_id IN (…) ORDER BY t, seq` makes the engine sort the entire result before its first
 * row (MergeSortingTransform), and one UNION ALL branch per asset (each read in key order and merged)
 * takes 2.2 s to plan at 100 assets and fails at 500 (TOO_MANY_QUERY_PLAN_OPTIMIZATIONS), measured
 * on ClickHouse 26.7. So each query covers a window sized to hold about PAGE_ROWS rows (learned from
 * the previous window), is capped at PAGE_CAP rows and continues after its last row's key when the
 * cap cut it: engine memory and the service's buffer stay bounded whatever the range. The next
 * window is read while the current one is sent, so window boundaries add no latency; a consumer that
 * stops pulling stops the reads after that one.
 */
const PAGE_ROWS = 32_768;
const PAGE_CAP = 2 * PAGE_ROWS;
/**
 * The first window; later ones scale by the rows the previous one held (at most ×16 per step). A
 * reader of a bounded range (a Tardis slice) asks for the whole range at once instead (`firstWindowMs`):
 * each query costs tens of ms whatever it holds, and PAGE_CAP still bounds the page.
 */
const FIRST_WINDOW_MS = 60_000;
const MAX_WINDOW_MS = 366 * 86_400_000;

const NO_LEVELS = "CAST([], 'Array(Tuple(price Float64, size Float64))')";
const NO_FEE = "CAST(NULL, 'Nullable(UInt16)')";
const WINDOW = "asset_id IN {ids:Array(String)} AND t >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({hi:Int64}, 'UTC')";
/**
 * Formatting the result is most of the engine's work here, so rows name their asset by its position
 * in {ids} and their market only when it is not the asset's usual one ({markets}, same positions):
 * null then. Event and side travel as their enum values. ReplayPage.row restores the ReplayRow.
 */
const ASSET = 'indexOf({ids:Array(String)}, asset_id) AS a, if(market = {markets:Array(String)}[a], NULL, toString(market)) AS m';

/**
 * The market_events a replay sends (docs/TIME-MACHINE.md §1): tick_size_change always; best_bid_ask,
 * market_resolved and new_market only to a client that asked for `custom_feature_enabled`, as
 * Polymarket does.
 */
export const MARKET_EVENTS = ['tick_size_change'] as const;
export const CUSTOM_MARKET_EVENTS = ['tick_size_change', 'best_bid_ask', 'market_resolved', 'new_market'] as const;

/**
 * One window of encoded rows, after the key (after_ms, after_seq, after_asset), at most {cap} rows,
 * in RowBinary for PageDecoder (its column types are listed there; the asset's position fits UInt16
 * as a connection subscribes at most MAX_ASSETS).
 */
export const PAGE_SQL = `
SELECT ms, seq, kind, CAST(a, 'UInt16'), m, best_bid, best_ask, price, size, side, bids, asks, fee, text, toUnixTimestamp64Micro(local_t)
FROM (
  SELECT toUnixTimestamp64Milli(t) AS ms, seq, CAST(event, 'Int8') AS kind, asset_id, ${ASSET}, best_bid, best_ask, price, size,
         CAST(book_side, 'Int8') AS side, ${NO_LEVELS} AS bids, ${NO_LEVELS} AS asks, fee_rate_bps AS fee, tx_hash AS text, local_t
  FROM ticks WHERE ${WINDOW} AND event != 'book'
  UNION ALL
  SELECT toUnixTimestamp64Milli(t) AS ms, seq, toInt8(2) AS kind, asset_id, ${ASSET}, toFloat64(0) AS best_bid, toFloat64(0) AS best_ask,
         toFloat64(0) AS price, toFloat64(0) AS size, toInt8(0) AS side, bids, asks, ${NO_FEE} AS fee, '' AS text, local_t
  FROM book_snapshots WHERE ${WINDOW} AND is_checkpoint = 0
  UNION ALL
  SELECT toUnixTimestamp64Milli(t) AS ms, seq, toInt8(CAST(event, 'Int8') + 3) AS kind, asset_id, ${ASSET}, toFloat64(0) AS best_bid,
         toFloat64(0) AS best_ask, toFloat64(0) AS price, toFloat64(0) AS size, toInt8(0) AS side, ${NO_LEVELS} AS bids, ${NO_LEVELS} AS asks,
         ${NO_FEE} AS fee, raw AS text, local_t
  FROM market_events WHERE ${WINDOW} AND event IN {market_events:Array(String)}
)
WHERE (ms, seq, asset_id) > ({after_ms:Int64}, {after_seq:UInt64}, {after_asset:String})
ORDER BY ms, seq, asset_id
LIMIT {cap:UInt32}
SETTINGS use_query_condition_cache = 0`;

/** Each asset's market as asset_stats knows it ('' when unknown), in the order of `assets`. */
const MARKETS_SQL = `
SELECT asset_id, any(market) FROM asset_stats WHERE asset_id IN {ids:Array(String)} GROUP BY asset_id`;

/**
 * Markets already read, per engine: an outcome token belongs to one market for good, so once known it
 * is not asked again (a Tardis replay asks for each slice of the same assets separately, and this
 * query was one of each slice's three round trips). Unknown markets ('') are asked again each time.
 * The value only spares the page the market column (ASSET): a row whose market differs still names
 * its own, so no answer depends on this cache. Bounded: emptied when it holds MARKETS_KEPT.
 */
const knownMarkets = new WeakMap<Engine, Map<string, string>>();
const MARKETS_KEPT = 200_000;

async function marketsOf(engine: Engine, assets: string[], signal: AbortSignal): Promise<string[]> {
  let known = knownMarkets.get(engine);
  if (!known) knownMarkets.set(engine, (known = new Map()));
  const missing = assets.filter((a) => !known.has(a));
  if (missing.length) {
    const read = await engine.compactRows<[string, string]>(MARKETS_SQL, { params: { ids: missing }, signal });
    if (known.size + read.length > MARKETS_KEPT) known.clear();
    for (const [asset, market] of read) if (market !== '') known.set(asset, market);
  }
  return assets.map((a) => known.get(a) ?? '');
}

interface Page {
  rows: ReplayPage;
  lo: number;
  hi: number;
}

interface Read {
  engine: Engine;
  assets: string[];
  markets: string[];
  marketEvents: readonly string[];
  signal: AbortSignal;
  /** The read's slices of the event loop for decoding its pages. */
  breaks: LoopBreaks;
}

/** The key a read continues after: the last row of a page the cap cut. */
interface After {
  ms: number;
  seq: number;
  asset: string;
}

async function readPage(read: Read, lo: number, hi: number, after: After | null, spare: ReplayPage | null): Promise<Page> {
  const params = {
    ids: read.assets,
    markets: read.markets,
    lo,
    hi,
    after_ms: after ? after.ms : lo - 1,
    after_seq: after ? after.seq : 0,
    after_asset: after ? after.asset : '',
    market_events: read.marketEvents,
    cap: PAGE_CAP,
  };
  // One result of at most PAGE_CAP rows (a few MB), not a stream: on the embedded engine a stream
  // opens a chDB session of its own, measured at 14–20% of the replay's main thread at speed=max.
  // Aborting the signal still cancels the engine query at once (a disconnect).
  const rows = spare ?? new ReplayPage(read.assets, read.markets);
  rows.clear();
  const decoder = new PageDecoder(rows);
  await decoder.pushInSlices(await read.engine.bytes(PAGE_SQL, 'RowBinary', { params, signal: read.signal }), read.breaks, read.signal);
  if (decoder.unfinished) throw new Error('replay read ended inside a row');
  return { rows, lo, hi };
}

/**
 * The stored events of `assets` with since ≤ t ≤ to in (t, seq) order, one read window at a time;
 * leaving the loop or `signal` cancels the reads.
 */
export async function* replayPages(
  engine: Engine,
  q: { assets: string[]; since: number; to: number; custom: boolean; firstWindowMs?: number },
  signal: AbortSignal,
): AsyncGenerator<ReplayPage> {
  const abort = new AbortController();
  const stop = () => abort.abort();
  signal.addEventListener('abort', stop, { once: true });
  let next: Promise<Page> | null = null;
  try {
    const read: Read = {
      engine,
      assets: q.assets,
      markets: await marketsOf(engine, q.assets, abort.signal),
      marketEvents: q.custom ? CUSTOM_MARKET_EVENTS : MARKET_EVENTS,
      signal: abort.signal,
      breaks: new LoopBreaks(),
    };
    let window = q.firstWindowMs ?? FIRST_WINDOW_MS;
    // Two pages take turns: one is read into while the consumer goes through the other. A page's
    // columns are kept from window to window (grown once to PAGE_CAP rows), not made anew: a page
    // outlives a young-generation GC, so each new one (~5 MB of columns, and the copies its growth
    // left) waited for a full GC as garbage. Replay speed=max of 1.4 M messages (bench dataset): array
    // buffers at their peak 76 → 54 MB, service RSS growth 236 → 213 MB.
    let spare: ReplayPage | null = null;
    next = readPage(read, q.since, Math.min(q.to, q.since + window - 1), null, null);
    while (next) {
      const page: Page = await next;
      const { rows, lo, hi } = page;
      next = null;
      if (rows.length === PAGE_CAP) {
        // Cut by the cap: go on after its last row, with a window the size that held PAGE_ROWS rows here.
        const i = rows.length - 1;
        const last = { ms: rows.ms[i], seq: rows.seq[i], asset: rows.assets[rows.asset[i]] };
        window = Math.max(1, Math.floor(((last.ms - lo + 1) * PAGE_ROWS) / PAGE_CAP));
        next = readPage(read, last.ms, Math.min(q.to, last.ms + window - 1), last, spare);
      } else if (hi < q.to) {
        window = Math.min(MAX_WINDOW_MS, Math.max(1, Math.floor((window * PAGE_ROWS) / Math.max(rows.length, PAGE_ROWS / 16))));
        next = readPage(read, hi + 1, Math.min(q.to, hi + window), null, spare);
      }
      if (rows.length) yield rows;
      // The consumer asked for the next page: it is done with this one, which the read after next fills.
      spare = rows;
    }
  } finally {
    signal.removeEventListener('abort', stop);
    abort.abort();
    // A window read ahead that nobody will take: its cancellation is expected.
    next?.catch(() => {});
  }
}

/**
 * Messages handed over at a time. A whole window's (~15 MB of text) outlived the young generation,
 * so it was promoted and collected by full GCs: at 256 the garbage dies young (in-process 3M-event
 * replay: GC 20% → 9% of the CPU profile, V8 heap peak 145 → 60 MB, 275k → ~400k events/s).
 */
const BATCH = 256;

/** One wire message and what the session needs to resume exactly after it. */
export interface ReplayMessage {
  ms: number;
  /** When the recorder received it (local_t, Unix µs; its first event's): the Tardis replay's line time. */
  localUs: number;
  text: string;
  /** Stored events it carries. */
  events: number;
  /** seq of its last event, and the assets of its events with that seq (see ReplayPosition). */
  seq: number;
  assets: string[];
}

/**
 * The stored events of `assets` with since ≤ t ≤ to that `wanted` lets through, as wire messages in
 * order, BATCH at a time (so a fast consumer sends many without a promise per message):
 * `price_change` items of one market and one millisecond that are consecutive in arrival
 * order travel in one message, as the exchange sends them; a market event stored for several assets
 * (new_market, market_resolved: the rows share t and seq) is one message; every other event is a
 * message of its own.
 */
export async function* replayMessages(
  engine: Engine,
  q: { assets: string[]; since: number; to: number; custom: boolean; wanted: (row: ReplayRow) => boolean; firstWindowMs?: number },
  signal: AbortSignal,
): AsyncGenerator<ReplayMessage[]> {
  // A group may go on in the next window: it is sent once it is complete.
  let group: { market: string; ms: number; localUs: number; items: string[]; seq: number; assets: string[] } | null = null;
  // A market event held back until its other assets' rows (ORDER BY ms, seq, asset_id: they follow
  // it, maybe in the next window) have joined it, so the message names every asset it carries.
  let shared: ReplayMessage | null = null;
  // One row array, refilled for each row of a page: nothing below keeps it.
  const r = [] as unknown as ReplayRow;
  for await (const page of replayPages(engine, q, signal)) {
    let out: ReplayMessage[] = [];
    for (let i = 0; i < page.length; i++) {
      if (out.length >= BATCH) {
        yield out;
        out = [];
      }
      if (!q.wanted(page.row(i, r))) continue;
      const [ms, seq, kind, assetId, market] = r;
      const localUs = page.local[i];
      if (shared && shared.ms === ms && shared.seq === seq && shared.text === r[13]) {
        shared.assets.push(assetId);
        continue;
      }
      if (shared) out.push(shared);
      shared = null;
      if (kind === 'price_change') {
        if (group && group.market === market && group.ms === ms) {
          group.items.push(changeItem(r));
          if (seq !== group.seq) group.assets = [];
          group.seq = seq;
          group.assets.push(assetId);
          continue;
        }
        if (group) out.push(grouped(group));
        group = { market, ms, localUs, items: [changeItem(r)], seq, assets: [assetId] };
        continue;
      }
      if (group) out.push(grouped(group));
      group = null;
      if (isMarketEvent(kind)) shared = { ms, localUs, text: r[13], events: 1, seq, assets: [assetId] };
      else out.push({ ms, localUs, text: kind === 'book' ? bookEvent(r) : tradeEvent(r), events: 1, seq, assets: [assetId] });
    }
    if (out.length) yield out;
  }
  if (group) yield [grouped(group)];
  if (shared) yield [shared];
}

function grouped(g: { market: string; ms: number; localUs: number; items: string[]; seq: number; assets: string[] }): ReplayMessage {
  return { ms: g.ms, localUs: g.localUs, text: priceChange(g.market, g.ms, g.items), events: g.items.length, seq: g.seq, assets: g.assets };
}
