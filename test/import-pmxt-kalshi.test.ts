import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planImport } from '../src/ingest/import/plan.js';
import { runImport } from '../src/ingest/import/run.js';
import { type DataApp, startDataApp } from './support/data-app.js';
import { tableHashes } from './support/table-hashes.js';
import { json } from './support/ticks-fixture.js';

/**
 * Issue 40's "Must show" for an imported pmxt-Kalshi file (docs/KALSHI.md "pmxt-kalshi import"): hours of
 * pmxt's Kalshi archive, generated here with the schema test/fixtures/pmxt-kalshi/PROVENANCE.md records
 * (10 columns; ladders as lists of (price decimal(9,4), size decimal(18,6)) structs whose fields are named
 * "1" and "2"; snapshot rows without `timestamp`), imported with `import pmxt-kalshi`, answer
 * /v1/orderbook at 500 instants as an independent model of Kalshi's two bid ladders written below from
 * the schema alone (integers of 1/10,000 dollars and 1/1,000,000 contracts; nothing of src/ in it), and
 * /v1/ticks row for row. Hours 00, 01 and 03: hour 02 is a source_missing gap; hour 01 continues hour
 * 00's books (its deltas apply to them). Bad rows are skipped and named; a file of another schema is an
 * error naming it; a second import, and the hours named in another order, store the same rows.
 */
const H0 = Date.UTC(2026, 4, 15, 0);
const H = 3_600_000;
const HOURS = [H0, H0 + H, H0 + 3 * H];
const TICKERS = ['KXBTCD-26MAY1500-T94999.99', 'KXETH-26MAY15-B3200', 'KXNBAGAME-26MAY15LALBOS-LAL', 'KXHIGHNY-26MAY15-T60', 'KXFED-26JUN-H0'];
const BUSY = TICKERS[0];

/** One row as pmxt writes it (prices in 1/10,000, sizes in 1/1,000,000: the decimals' own integers). */
interface KRow {
  tr: number; // timestamp_received, ms
  ts: number | null; // timestamp, µs
  ticker: string | null;
  type: string;
  side: string | null;
  yes: [number, number][];
  no: [number, number][];
  price: number | null;
  delta: number | null;
  /** The problem the importer must name, for the rows made bad on purpose. */
  bad?: string;
}

/** A deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ROWS_PER_HOUR = 700;
const ROW_GROUP = 100;

/** The hours' rows: per ticker a snapshot first (hour 03: after the hole), then deltas and a few snapshots. */
function generate(): KRow[][] {
  const rnd = random(40);
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const size = () => (rnd() < 0.2 ? Math.floor(rnd() * 5_000_000_000) + 1 : Math.floor(rnd() * 50_000) * 10_000 + 10_000);
  const price = () => (rnd() < 0.1 ? pick([1, 9999, 2, 9998, 50, 4999]) : Math.floor(rnd() * 98 + 1) * 100);
  const ladder = () => {
    const levels = new Map<number, number>();
    for (let i = Math.floor(rnd() * 8); i > 0; i--) levels.set(price(), size());
    return [...levels].sort((a, b) => a[0] - b[0]);
  };
  const known = new Map<string, { yes: Set<number>; no: Set<number> }>();
  return HOURS.map((hour, h) => {
    const rows: KRow[] = [];
    let clock = hour * 1000 + 5_000; // µs
    const snapshot = (ticker: string): KRow => {
      const yes = ladder();
      const no = ladder();
      known.set(ticker, { yes: new Set(yes.map((l) => l[0])), no: new Set(no.map((l) => l[0])) });
      return { tr: Math.floor(clock / 1000), ts: null, ticker, type: 'orderbook_snapshot', side: null, yes, no, price: null, delta: null };
    };
    const deltaRow = (ticker: string): KRow => {
      const side = rnd() < 0.5 ? 'yes' : 'no';
      const levels = known.get(ticker)![side];
      const p = levels.size > 0 && rnd() < 0.7 ? pick([...levels]) : price();
      levels.add(p);
      // Mostly +/- a size; sometimes more than rests there (the level goes).
      const delta = rnd() < 0.25 ? -size() * 3 : rnd() < 0.5 ? -Math.floor(size() / 3) : size();
      return { tr: Math.floor(clock / 1000) + 400, ts: clock, ticker, type: 'orderbook_delta', side, yes: [], no: [], price: p, delta };
    };
    if (h !== 1) for (const ticker of TICKERS) rows.push(snapshot(ticker));
    while (rows.length < ROWS_PER_HOUR) {
      clock += Math.floor(rnd() * 5_000_000) + (rnd() < 0.3 ? 0 : 1);
      const ticker = rnd() < 0.4 ? BUSY : pick(TICKERS);
      if (rnd() < 0.03) {
        rows.push(snapshot(ticker));
        continue;
      }
      rows.push(deltaRow(ticker));
    }
    if (h === 0) spoil(rows);
    return rows;
  });
}

/** Bad rows, each at a known place (spread over row groups), in place of generated ones. */
function spoil(rows: KRow[]): void {
  const bad: [number, KRow][] = [
    [37, { ...rows[37], type: 'orderbook_trade', bad: 'event_type "orderbook_trade" is neither orderbook_snapshot nor orderbook_delta' }],
    [150, { ...rows[150], ticker: '', bad: 'no market_ticker' }],
    [233, { ...deltaAt(rows, 233), side: 'maybe', bad: 'orderbook_delta side "maybe" is not yes or no' }],
    [402, { ...deltaAt(rows, 402), price: null, bad: 'orderbook_delta without a price in [0, 1]' }],
    [515, { ...deltaAt(rows, 515), delta: null, bad: 'orderbook_delta without a delta' }],
    [
      611,
      {
        ...rows[611],
        type: 'orderbook_snapshot',
        ts: null,
        yes: [[15_000, 1_000_000]],
        no: [],
        price: null,
        delta: null,
        side: null,
        bad: 'yes_bids: not a list of (price in [0, 1], size ≥ 0)',
      },
    ],
  ];
  for (const [i, row] of bad) rows.splice(i, 1, row);
}

/** Row i as a delta of the same ticker and time (a bad row must take the place of one). */
function deltaAt(rows: KRow[], i: number): KRow {
  const r = rows[i];
  return r.type === 'orderbook_delta' ? r : { ...r, type: 'orderbook_delta', ts: r.tr * 1000, yes: [], no: [], side: 'yes', price: 5000, delta: 10_000 };
}

const dec = (v: number, scale: number) => {
  const sign = v < 0 ? '-' : '';
  const digits = String(Math.abs(v)).padStart(scale + 1, '0');
  return `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
};
const level = ([p, s]: [number, number]) => ({ '1': dec(p, 4), '2': dec(s, 6) });

const LADDER = 'Array(Tuple(`1` Nullable(Decimal(9, 4)), `2` Nullable(Decimal(18, 6))))';
const JSON_STRUCTURE =
  'tr Int64, ts Nullable(Int64), market_ticker Nullable(String), market_id Nullable(String), event_type Nullable(String), side Nullable(String), ' +
  `yes_bids ${LADDER}, no_bids ${LADDER}, price Nullable(Decimal(9, 4)), delta Nullable(Decimal(18, 6))`;
/** The archive's columns and types (PROVENANCE.md): times ms and µs, ladders as lists of ("1", "2") structs. */
const PARQUET_STRUCTURE =
  "timestamp_received Nullable(DateTime64(3, 'UTC')), timestamp Nullable(DateTime64(6, 'UTC')), market_ticker Nullable(String), market_id Nullable(String), " +
  `event_type Nullable(String), side Nullable(String), yes_bids ${LADDER}, no_bids ${LADDER}, price Nullable(Decimal(9, 4)), delta Nullable(Decimal(18, 6))`;

async function writeHour(path: string, rows: KRow[]): Promise<void> {
  const src = `${path}.jsonl`;
  writeFileSync(
    src,
    rows
      .map((r) =>
        JSON.stringify({
          tr: r.tr,
          ts: r.ts,
          market_ticker: r.ticker,
          market_id: r.ticker === null ? null : `id-${r.ticker}`,
          event_type: r.type,
          side: r.side,
          yes_bids: r.yes.map(level),
          no_bids: r.no.map(level),
          price: r.price === null ? null : dec(r.price, 4),
          delta: r.delta === null ? null : dec(r.delta, 6),
        }),
      )
      .join('\n'),
  );
  await t.te.engine.command(
    `INSERT INTO FUNCTION file({dst:String}, Parquet, '${PARQUET_STRUCTURE.replaceAll("'", "\\'")}')
     SELECT fromUnixTimestamp64Milli(tr, 'UTC'), if(ts IS NULL, NULL, fromUnixTimestamp64Micro(assumeNotNull(ts), 'UTC')), market_ticker, market_id,
       event_type, side, yes_bids, no_bids, price, delta
     FROM file({src:String}, JSONEachRow, '${JSON_STRUCTURE}')
     SETTINGS max_threads = 1, output_format_parquet_row_group_size = ${ROW_GROUP}, engine_file_truncate_on_insert = 1`,
    { params: { src, dst: path } },
  );
}

// ---- The independent model: Kalshi's two bid ladders, from the schema (docs.kalshi.com: a NO bid at q is a YES ask at 1 − q).

interface ModelEvent {
  t: number;
  seq: number;
  local: number;
  kind: 'book' | 'change';
  yes: Map<number, number>;
  no: Map<number, number>;
  /** A change: the YES-terms price (1/10,000), the new size (1/1,000,000), the ladder it is on. */
  price?: number;
  size?: number;
  bid?: boolean;
}

/** Per ticker, its good rows in file order, hour after hour, with the ladders after each. */
function model(hours: KRow[][]): Map<string, ModelEvent[]> {
  const out = new Map<string, ModelEvent[]>();
  const books = new Map<string, { yes: Map<number, number>; no: Map<number, number> }>();
  hours.forEach((rows, h) => {
    const hourIndex = Math.floor(HOURS[h] / H);
    rows.forEach((r, n) => {
      if (r.bad) return;
      const id = `kalshi:${r.ticker}`;
      const t = r.ts === null ? r.tr : Math.floor(r.ts / 1000);
      const seq = hourIndex * 2 ** 32 + n;
      let book = books.get(id);
      const list = out.get(id) ?? [];
      out.set(id, list);
      if (r.type === 'orderbook_snapshot') {
        book = { yes: new Map(r.yes.filter((l) => l[1] > 0)), no: new Map(r.no.filter((l) => l[1] > 0)) };
        books.set(id, book);
        list.push({ t, seq, local: r.tr, kind: 'book', yes: new Map(book.yes), no: new Map(book.no) });
        return;
      }
      book ??= { yes: new Map(), no: new Map() };
      books.set(id, book);
      const ladder = r.side === 'yes' ? book.yes : book.no;
      const size = Math.max(0, (ladder.get(r.price!) ?? 0) + r.delta!);
      if (size > 0) ladder.set(r.price!, size);
      else ladder.delete(r.price!);
      list.push({
        t,
        seq,
        local: r.tr,
        kind: 'change',
        yes: new Map(book.yes),
        no: new Map(book.no),
        price: r.side === 'yes' ? r.price! : 10_000 - r.price!,
        size,
        bid: r.side === 'yes',
      });
    });
  });
  return out;
}

/** The book as /v1/orderbook states it: YES bids descending, asks = 1 − NO bids ascending. */
function served(e: ModelEvent | undefined, limit: number) {
  if (!e) return 404;
  const bids = [...e.yes].sort((a, b) => b[0] - a[0]).map(([p, s]) => ({ price: p / 10_000, size: s / 1_000_000 }));
  const asks = [...e.no]
    .map(([q, s]) => [10_000 - q, s])
    .sort((a, b) => a[0] - b[0])
    .map(([p, s]) => ({ price: p / 10_000, size: s / 1_000_000 }));
  return { best_bid: bids[0]?.price ?? 0, best_ask: asks[0]?.price ?? 1, bids: bids.slice(0, limit), asks: asks.slice(0, limit) };
}

/** The last event with t ≤ at (events of equal t in arrival order). */
function at(events: ModelEvent[], instant: number): ModelEvent | undefined {
  let found: ModelEvent | undefined;
  for (const e of events) if (e.t <= instant) found = e;
  return found;
}

let t: DataApp;
let dir: string;
let hours: KRow[][];
let files: string[];
let expected: Map<string, ModelEvent[]>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tickhouse-pmxt-kalshi-'));
  t = await startDataApp(H0 + 2 * 86_400_000);
  hours = generate();
  files = HOURS.map((hour) => join(dir, `kalshi_orderbook_${new Date(hour).toISOString().slice(0, 13)}.parquet`));
  for (const [i, path] of files.entries()) await writeHour(path, hours[i]);
  expected = model(hours);
}, 120_000);

afterAll(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const auth = () => ({ authorization: `Bearer ${t.key}` });

async function truncateAll(): Promise<void> {
  const tables = await t.te.engine.rows<{ name: string }>(
    `SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' AND name != 'schema_migrations'`,
  );
  for (const { name } of tables) await t.te.engine.command(`TRUNCATE TABLE ${name}`);
}

const importFiles = async (paths: string[]) => runImport(t.te.engine, await planImport('pmxt-kalshi', paths));

describe('import pmxt-kalshi', () => {
  it('imports the hours: bad rows skipped and named by row group and row, hour 02 a source_missing gap', async () => {
    const plan = await planImport('pmxt-kalshi', [dir]);
    expect(plan.units.map((u) => (u.kind === 'engine' ? u.key : u.label))).toEqual([
      'pmxt-kalshi:2026-05-15T00',
      'pmxt-kalshi:2026-05-15T01',
      'pmxt-kalshi:2026-05-15T03',
    ]);
    expect(plan.missing).toEqual([[H0 + 2 * H, H0 + 3 * H]]);
    const summary = await runImport(t.te.engine, plan);
    const bad = hours[0].flatMap((r, n) => (r.bad ? [{ n, bad: r.bad }] : []));
    expect(bad).toHaveLength(6);
    expect(summary.firstProblems).toEqual(
      bad.map(({ n, bad }) => ({ file: files[0], where: `row group ${Math.floor(n / ROW_GROUP)}, row ${n}`, message: `${bad}: the row is skipped` })),
    );
    expect(summary.failedUnits).toBe(0);
    const good = hours.flat().filter((r) => !r.bad).length;
    expect(summary.events).toBe(good);
  }, 300_000);

  it('/v1/orderbook at 500 instants equals the model of the two ladders (hour 01 continuing hour 00, hour 03 after the hole)', async () => {
    const mismatches: unknown[] = [];
    let compared = 0;
    let found = 0;
    for (const [i, ticker] of TICKERS.entries()) {
      const id = `kalshi:${ticker}`;
      const count = i === 0 ? 300 : 50;
      const events = expected.get(id)!;
      for (let k = 0; k < count; k++) {
        // Instants over the three hours and the hole, some exactly at event times.
        const instant = k % 5 === 0 ? events[(k * 7) % events.length].t : Math.round(H0 - 500 + ((4 * H + 1000) * k) / (count - 1));
        const res = await t.get(`/v1/orderbook?asset_id=${encodeURIComponent(id)}&timestamp=${instant}&limit=100`, auth());
        const want = served(at(events, instant), 100);
        const got = res.status === 404 ? 404 : (({ best_bid, best_ask, bids, asks }) => ({ best_bid, best_ask, bids, asks }))((await json(res)).data);
        compared++;
        if (want !== 404) found++;
        if (JSON.stringify(got) !== JSON.stringify(want)) mismatches.push({ ticker, instant, got, want });
      }
    }
    expect(compared).toBe(500);
    expect(found).toBeGreaterThan(450);
    expect(mismatches.slice(0, 3)).toEqual([]);
  }, 300_000);

  it('/v1/ticks: a book tick per snapshot, a price_change per delta with the new absolute size and the best bid/ask after it', async () => {
    for (const ticker of [BUSY, TICKERS[3]]) {
      const id = `kalshi:${ticker}`;
      const res = await t.get(`/v1/ticks?asset_id=${encodeURIComponent(id)}&start=${H0 - H}&end=${H0 + 5 * H}&limit=100000&fields=all`, auth());
      const got = (await json(res)).data;
      const want = expected.get(id)!.map((e) => {
        const top = served(e, 1) as { best_bid: number; best_ask: number };
        return {
          t: e.t,
          event: e.kind === 'book' ? 'book' : 'price_change',
          side: 'YES',
          best_bid: top.best_bid,
          best_ask: top.best_ask,
          price: e.kind === 'book' ? 0 : e.price! / 10_000,
          size: e.kind === 'book' ? 0 : e.size! / 1_000_000,
          book_side: e.kind === 'book' ? '' : e.bid ? 'bid' : 'ask',
          taker_side: '',
          local_t: e.local,
          seq: e.seq,
        };
      });
      expect(got.length).toBe(want.length);
      expect(got).toEqual(want);
    }
  }, 120_000);

  it('coverage: the hours present captured, hour 02 source_missing; the imports listed per hour', async () => {
    const id = `kalshi:${BUSY}`;
    const res = await t.get(`/v1/coverage?asset_id=${encodeURIComponent(id)}&start=${H0}&end=${H0 + 4 * H}`, auth());
    const cov = (await json(res)).data;
    expect(cov).toMatchObject({
      captured: [
        { from: H0, to: H0 + 2 * H },
        { from: H0 + 3 * H, to: H0 + 4 * H },
      ],
      gaps: [{ from: H0 + 2 * H, to: H0 + 3 * H, reason: 'source_missing' }],
    });
    expect(cov.imports.map((i: { format: string; unit: string }) => [i.format, i.unit])).toEqual([
      ['pmxt-kalshi', 'pmxt-kalshi:2026-05-15T00'],
      ['pmxt-kalshi', 'pmxt-kalshi:2026-05-15T01'],
      ['pmxt-kalshi', 'pmxt-kalshi:2026-05-15T03'],
    ]);
  });

  it('idempotent: the same files again add nothing; the hours named in another order store the same rows', async () => {
    const first = await tableHashes(t.te.engine);
    const again = await importFiles(files);
    expect(again.skippedUnits).toBe(3);
    expect(await tableHashes(t.te.engine)).toEqual(first);

    await truncateAll();
    const reversed = await importFiles([...files].reverse());
    expect(reversed.failedUnits).toBe(0);
    expect(await tableHashes(t.te.engine)).toEqual(first);
  }, 300_000);

  it('--assets first, then the hours, then hour 01 re-published with rows appended: every table as one clean import of the grown hours', async () => {
    const last = hours[1].at(-1)!;
    const appended: KRow[] = Array.from({ length: 60 }, (_, i) => {
      const ts = last.ts! + (i + 1) * 1_000_000;
      const delta = (i % 3 === 0 ? -1 : 1) * (i + 1) * 120_000;
      return {
        tr: Math.floor(ts / 1000) + 400,
        ts,
        ticker: TICKERS[i % 5],
        type: 'orderbook_delta',
        side: i % 2 ? 'no' : 'yes',
        yes: [],
        no: [],
        price: 4000 + (i % 4) * 100,
        delta,
      };
    });
    const grown = join(dir, 'grown', files[1].slice(dir.length + 1));
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(dir, 'grown'));
    await writeHour(grown, [...hours[1], ...appended]);

    await truncateAll();
    const a = `kalshi:${TICKERS[1]}`;
    const subset = await runImport(t.te.engine, await planImport('pmxt-kalshi', [files[0]]), { assets: new Set([a]) });
    expect(subset.events).toBe(hours[0].filter((r) => !r.bad && `kalshi:${r.ticker}` === a).length);
    const rest = await importFiles(files);
    expect(rest.events).toBe(hours.flat().filter((r) => !r.bad).length - subset.events);
    const more = await importFiles([grown]);
    expect(more.events).toBe(appended.length);
    const sequence = await tableHashes(t.te.engine);

    await truncateAll();
    await importFiles([files[0], grown, files[2]]);
    expect(sequence).toEqual(await tableHashes(t.te.engine));
  }, 300_000);

  it('a file that is not of the pmxt Kalshi schema is an error naming it', async () => {
    const path = join(dir, 'other', 'kalshi_orderbook_2026-05-15T05.parquet');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(dir, 'other'));
    await t.te.engine.command(
      `INSERT INTO FUNCTION file({dst:String}, Parquet) SELECT now64(3) AS timestamp_received, 'X' AS market_ticker, 'book' AS event_type, '[]' AS bids
       SETTINGS engine_file_truncate_on_insert = 1`,
      { params: { dst: path } },
    );
    const plan = await planImport('pmxt-kalshi', [path]);
    expect(plan.units).toEqual([]);
    expect(plan.problems).toEqual([
      {
        file: path,
        where: '',
        message: expect.stringMatching(
          /^not a pmxt Kalshi file: unknown column bids; missing columns timestamp, market_id, side, yes_bids, no_bids, price, delta/,
        ),
      },
    ]);
    // The right columns, times as bare integers: the file is refused, not read as seconds.
    const ints = join(dir, 'other', 'kalshi_orderbook_2026-05-15T06.parquet');
    await t.te.engine.command(
      `INSERT INTO FUNCTION file({dst:String}, Parquet) SELECT toInt64(1778803200000) AS timestamp_received, toInt64(1778803200000000) AS timestamp,
         'X' AS market_ticker, 'id' AS market_id, 'orderbook_delta' AS event_type, 'yes' AS side, CAST([] AS ${LADDER}) AS yes_bids,
         CAST([] AS ${LADDER}) AS no_bids, toDecimal32(0.5, 4) AS price, toDecimal64(1, 6) AS delta
       SETTINGS engine_file_truncate_on_insert = 1`,
      { params: { dst: ints } },
    );
    expect((await planImport('pmxt-kalshi', [ints])).problems).toEqual([
      { file: ints, where: '', message: 'not a pmxt Kalshi file: column timestamp_received is Int64, not a timestamp' },
    ]);
  });
});
