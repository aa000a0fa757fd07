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
const PAGE_ROWS = 8192;
const PAGE_CAP = 4 * PAGE_ROWS;
/** The first window; later ones scale by the rows the previous one held (at most ×16 per step). */
const FIRST_WINDOW_MS = 60_000;
const MAX_WINDOW_MS = 366 * 86_400_000;

const NO_LEVELS = "CAST([], 'Array(Tuple(price Float64, size Float64))')";
const WINDOW = "asset_id IN {ids:Array(String)} AND t >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC') AND t <= fromUnixTimestamp64Milli({hi:Int64}, 'UTC')";

/** One window of ReplayRow, after the key (after_ms, after_seq, after_asset), at most {cap} rows. */
export const PAGE_SQL = `
SELECT ms, seq, kind, asset_id, market, best_bid, best_ask, price, size, side, bids, asks
FROM (
  SELECT toUnixTimestamp64Milli(t) AS ms, seq, toString(event) AS kind, asset_id, market, best_bid, best_ask, price, size,
         toString(book_side) AS side, ${NO_LEVELS} AS bids, ${NO_LEVELS} AS asks
  FROM ticks WHERE ${WINDOW} AND event != 'book'
  UNION ALL
  SELECT toUnixTimestamp64Milli(t) AS ms, seq, 'book' AS kind, asset_id, market, toFloat64(0) AS best_bid, toFloat64(0) AS best_ask,
         toFloat64(0) AS price, toFloat64(0) AS size, '' AS side, bids, asks
  FROM book_snapshots WHERE ${WINDOW} AND is_checkpoint = 0
)
WHERE (ms, seq, asset_id) > ({after_ms:Int64}, {after_seq:UInt64}, {after_asset:String})
ORDER BY ms, seq, asset_id
LIMIT {cap:UInt32}
SETTINGS output_format_json_quote_64bit_integers = 0, use_query_condition_cache = 0`;

interface Page {
  rows: ReplayRow[];
  lo: number;
  hi: number;
}

async function readPage(engine: Engine, assets: string[], lo: number, hi: number, after: ReplayRow | null, signal: AbortSignal): Promise<Page> {
  const params = { ids: assets, lo, hi, after_ms: after ? after[0] : lo - 1, after_seq: after ? after[1] : 0, after_asset: after ? after[3] : '', cap: PAGE_CAP };
  const rows: ReplayRow[] = [];
  for await (const r of compactRowStream<ReplayRow>(engine, PAGE_SQL, { params, signal })) rows.push(r);
  return { rows, lo, hi };
}

/** The stored events of `assets` with since ≤ t ≤ to in (t, seq) order; leaving the loop or `signal` cancels the reads. */
export async function* replayRows(engine: Engine, q: { assets: string[]; since: number; to: number }, signal: AbortSignal): AsyncGenerator<ReplayRow> {
  const abort = new AbortController();
  const stop = () => abort.abort();
  signal.addEventListener('abort', stop, { once: true });
  let window = FIRST_WINDOW_MS;
  let next: Promise<Page> | null = readPage(engine, q.assets, q.since, Math.min(q.to, q.since + window - 1), null, abort.signal);
  try {
    while (next) {
      const page: Page = await next;
      const { rows, lo, hi } = page;
      const last = rows.at(-1) ?? null;
      next = null;
      if (rows.length === PAGE_CAP) {
        // Cut by the cap: go on after its last row, with a window the size that held PAGE_ROWS rows here.
        window = Math.max(1, Math.floor(((last![0] - lo + 1) * PAGE_ROWS) / PAGE_CAP));
        next = readPage(engine, q.assets, last![0], Math.min(q.to, last![0] + window - 1), last, abort.signal);
      } else if (hi < q.to) {
        window = Math.min(MAX_WINDOW_MS, Math.max(1, Math.floor((window * PAGE_ROWS) / Math.max(rows.length, PAGE_ROWS / 16))));
        next = readPage(engine, q.assets, hi + 1, Math.min(q.to, hi + window), null, abort.signal);
      }
      yield* rows;
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
 * order: `price_change` items of one market and one millisecond that are consecutive in arrival order
 * travel in one message, as the exchange sends them; every other event is a message of its own.
 */
export async function* replayMessages(
  engine: Engine,
  q: { assets: string[]; since: number; to: number; wanted: (row: ReplayRow) => boolean },
  signal: AbortSignal,
): AsyncGenerator<ReplayMessage> {
  let group: { market: string; ms: number; items: string[]; seq: number; assets: string[] } | null = null;
  for await (const r of replayRows(engine, q, signal)) {
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
      if (group) yield grouped(group);
      group = { market, ms, items: [changeItem(r)], seq, assets: [assetId] };
      continue;
    }
    if (group) yield grouped(group);
    group = null;
    yield { ms, text: kind === 'book' ? bookEvent(r) : tradeEvent(r), events: 1, seq, assets: [assetId] };
  }
  if (group) yield grouped(group);
}

function grouped(g: { market: string; ms: number; items: string[]; seq: number; assets: string[] }): ReplayMessage {
  return { ms: g.ms, text: priceChange(g.market, g.ms, g.items), events: g.items.length, seq: g.seq, assets: g.assets };
}
