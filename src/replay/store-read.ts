import type { Engine } from '../clickhouse/engine.js';
import { compactRowStream } from '../clickhouse/row-stream.js';
import { changeItem, bookEvent, priceChange, tradeEvent, type ReplayRow } from './wire.js';

/**
 * The replay's read of the store: every stored event of the subscribed assets from `since` to `to`,
 * merged across assets in (t, seq) order — the arrival order, as seq rises with arrival within a
 * source (asset_id breaks the tie two sources could make). `price_change` and `last_trade_price`
 * come from ticks; a `book` needs its levels, so it comes from the exchange snapshot stored with its
 * tick (book_snapshots, same t and seq).
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
/** The first window; later ones scale by the rows the previous one held (at most ×16 per step). */
const FIRST_WINDOW_MS = 60_000;
const MAX_WINDOW_MS = 366 * 86_400_000;

const NO_LEVELS = "CAST([], 'Array(Tuple(price Float64, size Float64))')";
const WINDOW = "asset_id IN {ids:Array(String)} AND t >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({hi:Int64}, 'UTC')";
/**
 * Formatting the result is most of the engine's work here, so rows name their asset by its position
 * in {ids} and their market only when it is not the asset's usual one ({markets}, same positions):
 * null then. Event and side travel as their enum values. `decode` restores the ReplayRow.
 */
const ASSET = 'indexOf({ids:Array(String)}, asset_id) AS a, if(market = {markets:Array(String)}[a], NULL, toString(market)) AS m';

/** One window of encoded rows, after the key (after_ms, after_seq, after_asset), at most {cap} rows. */
export const PAGE_SQL = `
SELECT ms, seq, kind, a, m, best_bid, best_ask, price, size, side, bids, asks
FROM (
  SELECT toUnixTimestamp64Milli(t) AS ms, seq, CAST(event, 'Int8') AS kind, asset_id, ${ASSET}, best_bid, best_ask, price, size,
         CAST(book_side, 'Int8') AS side, ${NO_LEVELS} AS bids, ${NO_LEVELS} AS asks
  FROM ticks WHERE ${WINDOW} AND event != 'book'
  UNION ALL
  SELECT toUnixTimestamp64Milli(t) AS ms, seq, toInt8(2) AS kind, asset_id, ${ASSET}, toFloat64(0) AS best_bid, toFloat64(0) AS best_ask,
         toFloat64(0) AS price, toFloat64(0) AS size, toInt8(0) AS side, bids, asks
  FROM book_snapshots WHERE ${WINDOW} AND is_checkpoint = 0
)
WHERE (ms, seq, asset_id) > ({after_ms:Int64}, {after_seq:UInt64}, {after_asset:String})
ORDER BY ms, seq, asset_id
LIMIT {cap:UInt32}
SETTINGS output_format_json_quote_64bit_integers = 0, use_query_condition_cache = 0`;

/** Each asset's market as asset_stats knows it ('' when unknown), in the order of `assets`. */
const MARKETS_SQL = `
SELECT asset_id, any(market) FROM asset_stats WHERE asset_id IN {ids:Array(String)} GROUP BY asset_id`;

/** The enum values of ticks.event and ticks.book_side (clickhouse/001_ticks.sql). */
const KINDS = [null, 'price_change', 'book', 'last_trade_price'] as const;
const SIDES = ['', 'BUY', 'SELL'] as const;

interface Page {
  rows: ReplayRow[];
  lo: number;
  hi: number;
}

interface Read {
  engine: Engine;
  assets: string[];
  markets: string[];
  signal: AbortSignal;
}

async function readPage(read: Read, lo: number, hi: number, after: ReplayRow | null): Promise<Page> {
  const params = {
    ids: read.assets,
    markets: read.markets,
    lo,
    hi,
    after_ms: after ? after[0] : lo - 1,
    after_seq: after ? after[1] : 0,
    after_asset: after ? after[3] : '',
    cap: PAGE_CAP,
  };
  // A stream, not one result: aborting it cancels the engine query at once (a disconnect), and its
  // rows are parsed as they come. (On the embedded engine each stream opens a session of its own,
  // measured at 14% of the replay's CPU at speed=max: the price of both.)
  const rows: ReplayRow[] = [];
  for await (const r of compactRowStream<unknown[]>(read.engine, PAGE_SQL, { params, signal: read.signal })) {
    // Decoded in place (see ASSET).
    const a = (r[3] as number) - 1;
    r[2] = KINDS[r[2] as number];
    r[3] = read.assets[a];
    r[4] ??= read.markets[a];
    r[9] = SIDES[r[9] as number];
    rows.push(r as ReplayRow);
  }
  return { rows, lo, hi };
}

/**
 * The stored events of `assets` with since ≤ t ≤ to in (t, seq) order, one read window at a time;
 * leaving the loop or `signal` cancels the reads.
 */
export async function* replayPages(engine: Engine, q: { assets: string[]; since: number; to: number }, signal: AbortSignal): AsyncGenerator<ReplayRow[]> {
  const abort = new AbortController();
  const stop = () => abort.abort();
  signal.addEventListener('abort', stop, { once: true });
  let next: Promise<Page> | null = null;
  try {
    const known = new Map(await engine.compactRows<[string, string]>(MARKETS_SQL, { params: { ids: q.assets }, signal: abort.signal }));
    const read: Read = { engine, assets: q.assets, markets: q.assets.map((a) => known.get(a) ?? ''), signal: abort.signal };
    let window = FIRST_WINDOW_MS;
    next = readPage(read, q.since, Math.min(q.to, q.since + window - 1), null);
    while (next) {
      const page: Page = await next;
      const { rows, lo, hi } = page;
      const last = rows.at(-1) ?? null;
      next = null;
      if (rows.length === PAGE_CAP) {
        // Cut by the cap: go on after its last row, with a window the size that held PAGE_ROWS rows here.
        window = Math.max(1, Math.floor(((last![0] - lo + 1) * PAGE_ROWS) / PAGE_CAP));
        next = readPage(read, last![0], Math.min(q.to, last![0] + window - 1), last);
      } else if (hi < q.to) {
        window = Math.min(MAX_WINDOW_MS, Math.max(1, Math.floor((window * PAGE_ROWS) / Math.max(rows.length, PAGE_ROWS / 16))));
        next = readPage(read, hi + 1, Math.min(q.to, hi + window), null);
      }
      if (rows.length) yield rows;
    }
  } finally {
    signal.removeEventListener('abort', stop);
    abort.abort();
    // A window read ahead that nobody will take: its cancellation is expected.
    next?.catch(() => {});
  }
}

/** One wire message and what the session needs to resume exactly after it. */
export interface ReplayMessage {
  ms: number;
  text: string;
  /** Stored events it carries. */
  events: number;
  /** seq of its last event, and the assets of its events with that seq (see ReplayPosition). */
  seq: number;
  assets: string[];
}

/**
 * The stored events of `assets` with since ≤ t ≤ to that `wanted` lets through, as wire messages in
 * order, a read window's worth at a time (so a fast consumer sends many without a promise per
 * message): `price_change` items of one market and one millisecond that are consecutive in arrival
 * order travel in one message, as the exchange sends them; every other event is a message of its own.
 */
export async function* replayMessages(
  engine: Engine,
  q: { assets: string[]; since: number; to: number; wanted: (row: ReplayRow) => boolean },
  signal: AbortSignal,
): AsyncGenerator<ReplayMessage[]> {
  // A group may go on in the next window: it is sent once it is complete.
  let group: { market: string; ms: number; items: string[]; seq: number; assets: string[] } | null = null;
  for await (const rows of replayPages(engine, q, signal)) {
    const out: ReplayMessage[] = [];
    for (const r of rows) {
      if (!q.wanted(r)) continue;
      const [ms, seq, kind, assetId, market] = r;
      if (kind === 'price_change') {
        if (group && group.market === market && group.ms === ms) {
          group.items.push(changeItem(r));
          if (seq !== group.seq) group.assets = [];
          group.seq = seq;
          group.assets.push(assetId);
          continue;
        }
        if (group) out.push(grouped(group));
        group = { market, ms, items: [changeItem(r)], seq, assets: [assetId] };
        continue;
      }
      if (group) out.push(grouped(group));
      group = null;
      out.push({ ms, text: kind === 'book' ? bookEvent(r) : tradeEvent(r), events: 1, seq, assets: [assetId] });
    }
    if (out.length) yield out;
  }
  if (group) yield [grouped(group)];
}

function grouped(g: { market: string; ms: number; items: string[]; seq: number; assets: string[] }): ReplayMessage {
  return { ms: g.ms, text: priceChange(g.market, g.ms, g.items), events: g.items.length, seq: g.seq, assets: g.assets };
}
