import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGammaFile, replayLines } from '../src/ingest/frame-files.js';
import { planImport } from '../src/ingest/import/plan.js';
import { runImport } from '../src/ingest/import/run.js';
import { receiveTimePrefix } from '../src/ingest/receive-time.js';
import { generateFrames } from './support/book-frames.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { tableHashes } from './support/table-hashes.js';
import { json } from './support/ticks-fixture.js';

/**
 * The Tardis round trip of issue 29 (docs/INGEST.md §6.3, docs/TARDIS.md §1): a capture stored the way the
 * recorder stores it (frames stamped on arrival, Gamma metadata loaded), downloaded through the datasets API
 * as the asset's incremental_book_L2 + trades files of each day, imported with `import tardis` (and the same
 * Gamma file as `--markets`) into an emptied store: /v1/orderbook at 500 instants answers the same, and
 * /v1/ticks answers what the Tardis files carry. One chDB directory per process, so "a fresh instance" is
 * the same store with every table truncated.
 *
 * What the Tardis CSV carries, compared exactly: exchange time (`timestamp`), receive time (`local_timestamp`,
 * µs), price, amount, book side (bid/ask), taker side (buy/sell), a trade's transaction hash (`id`), and the
 * kind as far as `is_snapshot` + file tell it. The asset's market (condition id) and outcome label (tick
 * `side`) come back from `--markets` (docs/INGEST.md §6).
 * What the schema cannot carry, compared as the contract says an import stores it:
 * - a later `book` message: written as diff rows (docs/TARDIS.md §1.1.3: the levels it changed against the
 *   book before it, asks then bids, best first, 0 for a removed level), so it comes back as `price_change`
 *   ticks (one per changed level, best bid/ask after each) and no exchange snapshot; only the file's opening
 *   snapshot is a `book`. Books are equal at every instant all the same.
 * - a trade's fee rate (`fee_rate_bps`): no column in Tardis's trades schema: NULL after the import.
 * - a book message's own tick size and last trade price: no column in incremental_book_L2: NULL.
 * - book / price_change `hash`: not stored by tickhouse in the first place (nothing to lose).
 * - `tick_size_change`, `best_bid_ask` (market_events): not in incremental_book_L2 or trades: none imported.
 * - `seq`: each store numbers its own arrivals; not compared, but the order it gives (equal `t`) is.
 */
let t: DataApp;
let dir: string;
const stream = generateFrames(2902, 4000);
const FIRST_US = stream.start * 1000;
const localUs = (i: number) => FIRST_US + i * 700 + 3;
// The generator's trades carry no transaction hash: give each one, so Tardis's `id` column is exercised.
const raw = stream.lines.map((l, i) => {
  if (!l.includes('"last_trade_price"')) return l;
  const e = JSON.parse(l);
  return JSON.stringify({ ...e, transaction_hash: `0x${i.toString(16).padStart(64, 'c')}` });
});
// Books as Polymarket sends them now, with their tick size and last trade price (neither has a Tardis column).
const withBookFields = (e: Record<string, unknown>) => (e.event_type === 'book' ? { ...e, tick_size: '0.01', last_trade_price: '0.5' } : e);
const lines = raw.map((l) => {
  if (!l.includes('"book"')) return l;
  const v = JSON.parse(l);
  return JSON.stringify(Array.isArray(v) ? v.map(withBookFields) : withBookFields(v));
});
const stamped = lines.map((l, i) => `${receiveTimePrefix(localUs(i))}${l}`);
const MARKETS: Record<string, string[]> = { '0xaaa1': ['1001', '1002'], '0xbbb2': ['2001', '2002'], '0xccc3': ['3001', '9009'] };

beforeAll(async () => {
  t = await startDataApp(stream.end + 86_400_000);
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-tardis-roundtrip-'));
}, 60_000);

afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

const auth = () => ({ authorization: `Bearer ${t.key}` });

async function answers(asset: string): Promise<{ books: unknown[]; ticks: Tick[] }> {
  const books: unknown[] = [];
  for (let i = 0; i < 500; i++) {
    const at = Math.round(stream.start - 1 + ((stream.end - stream.start + 2) * i) / 499);
    const res = await t.get(`/v1/orderbook?asset_id=${asset}&timestamp=${at}&limit=100`, auth());
    books.push(res.status === 404 ? 404 : (await json(res)).data);
  }
  const ticks = await json(
    await t.get(`/v1/ticks?asset_id=${asset}&start=${stream.start}&end=${stream.end + 1}&limit=100000&fields=book_side,taker_side,local_t`, auth()),
  );
  expect(ticks.meta.next_cursor).toBe(null);
  return { books, ticks: ticks.data };
}

interface Tick {
  t: number;
  event: string;
  side: string;
  best_bid: number;
  best_ask: number;
  price: number;
  size: number;
  book_side: string;
  taker_side: string;
  local_t: number;
}

/**
 * The contract's ticks of one asset from the capture's frames (docs/INGEST.md §2, docs/API.md /v1/ticks),
 * written here from the docs: each book-changing item a tick with the book's best bid/ask after it (0 / 1 for
 * an empty side), a trade a tick with the book's best at that moment. `viaTardis`: as the Tardis files give
 * them back (the module comment): a later `book` is its diff rows, each a `price_change`.
 */
function modelTicks(asset: string, label: string, viaTardis: boolean): { ticks: Tick[]; laterBooks: number } {
  const m = new TickModel(asset, label, viaTardis);
  lines.forEach((line, i) => {
    if (!line.startsWith('{') && !line.startsWith('[')) return;
    const parsed = JSON.parse(line);
    for (const e of Array.isArray(parsed) ? parsed : [parsed]) m.event(e, localUs(i) / 1000);
  });
  return { ticks: m.out, laterBooks: m.laterBooks };
}

type Levels = Map<number, number>;
type Wire = Record<string, any>;

function setLevel(m: Levels, price: number, size: number): void {
  if (size > 0) m.set(price, size);
  else m.delete(price);
}

function levelsOf(ls: { price: string; size: string }[]): Levels {
  const m: Levels = new Map();
  for (const l of ls) setLevel(m, Number(l.price), Number(l.size));
  return m;
}

/** Prices whose size differs between two sides, best first (asks ascending, bids descending), with the new size (0: gone). */
function diff(old: Levels, now: Levels, ascending: boolean): [number, number][] {
  const prices = [...new Set([...old.keys(), ...now.keys()])].filter((p) => old.get(p) !== now.get(p));
  return prices.sort((a, b) => (ascending ? a - b : b - a)).map((p) => [p, now.get(p) ?? 0]);
}

class TickModel {
  readonly out: Tick[] = [];
  laterBooks = 0;
  private bids: Levels | null = null;
  private asks: Levels = new Map();

  constructor(
    private readonly asset: string,
    private readonly label: string,
    private readonly viaTardis: boolean,
  ) {}

  event(e: Wire, local_t: number): void {
    const base = { t: Number(e.timestamp), side: this.label, local_t };
    if (e.event_type === 'book' && e.asset_id === this.asset) this.book(e, base);
    else if (e.event_type === 'price_change') {
      for (const it of e.price_changes ?? e.changes ?? [e]) {
        if ((it.asset_id ?? e.asset_id) === this.asset) this.change(base, it.side === 'BUY', Number(it.price), Number(it.size));
      }
    } else if (e.event_type === 'last_trade_price' && e.asset_id === this.asset) {
      const trade = { event: 'last_trade_price', price: Number(e.price), size: Number(e.size), book_side: '', taker_side: e.side.toLowerCase() };
      this.out.push({ ...base, ...this.best(), ...trade });
    }
  }

  private best() {
    return { best_bid: this.bids?.size ? Math.max(...this.bids.keys()) : 0, best_ask: this.asks.size ? Math.min(...this.asks.keys()) : 1 };
  }

  private change(base: Pick<Tick, 't' | 'side' | 'local_t'>, bid: boolean, price: number, size: number): void {
    if (!this.bids) {
      // A price_change before the asset's first book would open the file with an empty snapshot: not modelled.
      expect(this.viaTardis).toBe(false);
      this.bids = new Map();
    }
    setLevel(bid ? this.bids : this.asks, price, size);
    this.out.push({ ...base, event: 'price_change', ...this.best(), price, size, book_side: bid ? 'bid' : 'ask', taker_side: '' });
  }

  private book(e: Wire, base: Pick<Tick, 't' | 'side' | 'local_t'>): void {
    const bids = levelsOf(e.bids);
    const asks = levelsOf(e.asks);
    if (this.bids === null || !this.viaTardis) {
      // The file's opening snapshot (the asset's first book of the day, at its own times) or a live book.
      this.bids = bids;
      this.asks = asks;
      this.out.push({ ...base, event: 'book', ...this.best(), price: 0, size: 0, book_side: '', taker_side: '' });
      return;
    }
    this.laterBooks++;
    const rows = [...diff(this.asks, asks, true).map(([p, s]) => [0, p, s]), ...diff(this.bids, bids, false).map(([p, s]) => [1, p, s])];
    for (const [isBid, p, s] of rows) this.change(base, isBid === 1, p, s);
  }
}

/** What the store holds beside /v1/ticks for the asset: trade details, exchange books' own fields, market events. */
async function stored(asset: string) {
  const e = t.te.engine;
  const trades = await e.rows<{ t: string; h: string; f: number | null }>(
    `SELECT toString(local_t) AS t, tx_hash AS h, fee_rate_bps AS f FROM ticks WHERE asset_id = {asset:String} AND event = 'last_trade_price' ORDER BY t, seq`,
    { params: { asset } },
  );
  const books = await e.rows<{ ts: number | null; ltp: number | null }>(
    `SELECT tick_size AS ts, last_trade_price AS ltp FROM book_snapshots WHERE asset_id = {asset:String} AND is_checkpoint = 0 ORDER BY t, seq`,
    { params: { asset } },
  );
  const [{ n }] = await e.rows<{ n: string }>('SELECT toString(count()) AS n FROM market_events WHERE asset_id = {asset:String}', { params: { asset } });
  return { trades, books, marketEvents: Number(n) };
}

describe('Tardis round trip', () => {
  it('download incremental_book_L2 + trades through the datasets API, import into an emptied store: same books at 500 instants, ticks as carried', async () => {
    const gammaPath = join(dir, 'gamma.json');
    const gamma = Object.entries(MARKETS).map(([conditionId, tokens]) => ({
      conditionId,
      question: `Market ${conditionId}?`,
      slug: `market-${conditionId}`,
      clobTokenIds: JSON.stringify(tokens),
      outcomes: JSON.stringify(['Yes', 'No']),
    }));
    writeFileSync(gammaPath, JSON.stringify(gamma));
    const markets = await readGammaFile(gammaPath);
    const live = await replayLines(t.te.engine, stamped, { sourceId: 'live-capture', markets });
    expect(live.normalizer.malformed).toBe(0);
    const [{ asset }] = await t.te.engine.rows<{ asset: string }>(
      'SELECT asset_id AS asset FROM ticks GROUP BY asset_id ORDER BY count() DESC, asset_id LIMIT 1',
    );
    const label =
      Object.values(MARKETS)
        .find((ts) => ts.includes(asset))!
        .indexOf(asset) === 0
        ? 'YES'
        : 'NO';
    const before = await answers(asset);
    expect(before.books.filter((b) => b !== 404).length).toBeGreaterThan(400);
    expect(before.ticks.length).toBeGreaterThan(1000);
    // The model agrees with the live store: it is the contract's reading of these frames.
    expect(before.ticks).toEqual(modelTicks(asset, label, false).ticks);
    const storedBefore = await stored(asset);

    // The files of every UTC day the stream touches, named as Tardis's clients name them (Content-Disposition).
    const files: string[] = [];
    for (let day = Math.floor(stream.start / 86_400_000) * 86_400_000; day <= stream.end; day += 86_400_000) {
      const [y, m, d] = new Date(day).toISOString().slice(0, 10).split('-');
      for (const type of ['incremental_book_L2', 'trades']) {
        const res = await t.get(`/v1/tardis/datasets/polymarket/${type}/${y}/${m}/${d}/${asset}.csv.gz`, auth());
        expect(res.status).toBe(200);
        const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1];
        expect(name).toBe(`polymarket_${type}_${y}-${m}-${d}_${asset}.csv.gz`);
        const path = join(dir, name!);
        writeFileSync(path, Buffer.from(await res.arrayBuffer()));
        files.push(path);
      }
    }

    const tables = await t.te.engine.rows<{ name: string }>(
      `SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' AND name != 'schema_migrations'`,
    );
    for (const { name } of tables) await t.te.engine.command(`TRUNCATE TABLE ${name}`);
    expect(Number((await t.te.engine.rows<{ n: string }>('SELECT count() AS n FROM ticks'))[0].n)).toBe(0);
    expect((await t.get(`/v1/orderbook?asset_id=${asset}&timestamp=${stream.end}`, auth())).status).toBe(404);

    const plan = await planImport('tardis', [dir]);
    expect(plan.units.map((u) => u.files.length)).toEqual(Array(files.length / 2).fill(2));
    const summary = await runImport(t.te.engine, plan, { markets });
    expect(summary.problems).toBe(0);
    const after = await answers(asset);
    expect(after.books).toEqual(before.books);
    const viaTardis = modelTicks(asset, label, true);
    expect(viaTardis.laterBooks).toBeGreaterThan(10);
    expect(after.ticks).toEqual(viaTardis.ticks);
    // Every tick that is not a later book comes back exactly as it was stored.
    const laterBookTimes = (ts: Tick[]) => ts.filter((x, i) => x.event === 'book' && ts.findIndex((y) => y.event === 'book') !== i);
    const keep = (ts: Tick[], drop: Set<number>) => ts.filter((x) => !drop.has(x.local_t));
    const dropped = new Set([...laterBookTimes(before.ticks)].map((x) => x.local_t));
    expect(dropped.size).toBe(viaTardis.laterBooks);
    expect(keep(after.ticks, dropped)).toEqual(keep(before.ticks, dropped));

    const storedAfter = await stored(asset);
    // Carried: every trade's receive time and transaction hash; not carried: its fee rate (was 0).
    expect(storedBefore.trades.every((r) => r.f === 0 && r.h.length === 66)).toBe(true);
    expect(storedAfter.trades).toEqual(storedBefore.trades.map((r) => ({ ...r, f: null })));
    // Exchange books: the live ones stated tick size and last trade price; the import's one (the opening snapshot) cannot.
    expect(storedBefore.books).toEqual(storedBefore.books.map(() => ({ ts: 0.01, ltp: 0.5 })));
    expect(storedBefore.books.length).toBe(1 + viaTardis.laterBooks);
    expect(storedAfter.books).toEqual([{ ts: null, ltp: null }]);
    expect(storedBefore.marketEvents).toBeGreaterThan(0);
    expect(storedAfter.marketEvents).toBe(0);
    console.log(
      `tardis round trip: asset ${asset}, ${files.length} files, ${after.books.filter((b) => b !== 404).length}/500 instants with a book equal, ` +
        `ticks ${before.ticks.length} before / ${after.ticks.length} after, ${viaTardis.laterBooks} later books as diff rows, ` +
        `${keep(after.ticks, dropped).length} ticks equal field for field`,
    );

    // A second import of the same files changes nothing.
    const hashes = await tableHashes(t.te.engine);
    const again = await runImport(t.te.engine, await planImport('tardis', [dir]), { markets });
    expect(again.problems).toBe(0);
    expect(await tableHashes(t.te.engine)).toEqual(hashes);
  }, 900_000);
});
