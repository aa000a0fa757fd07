import { metricValue, type StalledReader, stalledReader } from '../stalled-reader.js';
import { refuseFileWrites } from '../write-faults.js';

/**
 * Issue 35: exports whose reader stops reading, one per format and kind (ticks and book datasets in
 * CSV, JSONL and Parquet, the Tardis files and a replay slice), and a Parquet export on a disk that
 * refuses writes. A stalled export stays open while the harness checks the service (alive, /healthz,
 * RSS with one connection held: what it holds for a reader that went quiet shows then); a small one
 * may end within the socket's buffers, holding nothing. The disk case must be a 503 in the contract's
 * shape before any byte, or a transfer cut short: never a clean 200 with a short file.
 */
export interface StalledContext {
  port: number;
  pid: number;
  unlimitedKey: string;
  assets: string[];
  first: number;
  last: number;
  now: number;
}

export interface StalledOutcome {
  description: string;
  violations: string[];
  held: number;
  release(): Promise<void>;
  /** What the release saw: an export still running after its reader left holds what it made. */
  afterRelease?: () => string[];
}

interface StalledKind {
  name: string;
  target(c: StalledContext): string;
  /** File writes of the service are refused while the request is answered. */
  fullDisk?: true;
}

const DAY = 86_400_000;
const day = (t: number) => new Date(t).toISOString().slice(0, 10).replaceAll('-', '/');
/** The largest Parquet book dataset at depth 100 (~211,000 rows): the last 200 s on a 1 ms grid. */
const grid = (c: StalledContext, format: string) =>
  `/v1/orderbook/export?asset_id=${c.assets[0]}&start=${c.now - 200_000}&end=${c.now}&depth=100&interval=1&format=${format}`;
const ticks = (c: StalledContext, format: string) => `/v1/ticks/export?asset_id=${c.assets[0]}&start=${c.first}&end=${c.last}&format=${format}&fields=all`;
/** The most recent finished day with data (the demo's days end at now). */
const finishedDay = (c: StalledContext) => day(Math.min(c.last, c.now - (c.now % DAY) - 1));
const tardis = (type: string) => (c: StalledContext) => `/v1/tardis/datasets/polymarket/${type}/${finishedDay(c)}/${c.assets[0]}.csv.gz`;

const KINDS: StalledKind[] = [
  ...['csv', 'jsonl', 'parquet'].map((f) => ({ name: `ticks export ${f}`, target: (c: StalledContext) => ticks(c, f) })),
  ...['csv', 'jsonl', 'parquet'].map((f) => ({ name: `book export ${f}, 1 ms grid, depth 100`, target: (c: StalledContext) => grid(c, f) })),
  {
    name: 'book export csv, every change, depth 25',
    target: (c) => `/v1/orderbook/export?asset_id=${c.assets[0]}&start=${c.first}&end=${c.last}&depth=25`,
  },
  ...['incremental_book_L2', 'trades', 'book_snapshot_25', 'book_snapshot_5', 'quotes'].map((t) => ({ name: `Tardis ${t}`, target: tardis(t) })),
  {
    name: 'Tardis replay slice of a day',
    target: (c) => {
      const filters = encodeURIComponent(
        JSON.stringify([
          { channel: 'book', symbols: c.assets },
          { channel: 'price_change', symbols: c.assets },
        ]),
      );
      return `/v1/tardis/data-feeds/polymarket?from=${new Date(c.now - (c.now % DAY) - DAY).toISOString()}&sliceSize=1440&filters=${filters}`;
    },
  },
  { name: 'Parquet ticks export on a disk that refuses writes', target: (c) => ticks(c, 'parquet'), fullDisk: true },
];

export const STALLED_KINDS = KINDS.length;

/** Case `index`: each kind in order, again and again. */
export async function stalledCase(index: number, c: StalledContext): Promise<StalledOutcome> {
  const kind = KINDS[index % KINDS.length];
  const target = kind.target(c);
  const violations: string[] = [];
  const description = `${kind.name}: GET ${target.slice(0, 160)}`;
  const repair = kind.fullDisk ? refuseFileWrites(c.pid) : null;
  let reader: StalledReader;
  try {
    reader = await stalledReader(c.port, target, { Authorization: `Bearer ${c.unlimitedKey}`, 'Accept-Encoding': 'gzip' });
  } catch (err) {
    return { description, violations: [`no answer: ${(err as Error).message}`], held: 0, release: async () => {} };
  } finally {
    repair?.();
  }
  if (kind.fullDisk) {
    const body = reader.status === 503 ? JSON.parse(reader.body.toString()) : null;
    if (reader.status !== 503 || body?.detail?.error !== 'service_unavailable' || !reader.headers['retry-after']) {
      violations.push(
        `a Parquet export the disk refused answered ${reader.status} ${reader.body.toString('latin1').slice(0, 120)}, not a 503 with Retry-After`,
      );
    }
    reader.close();
    return { description: `${description} → ${reader.status}`, violations, held: 0, release: async () => {} };
  }
  if (reader.status !== 200) violations.push(`answered ${reader.status}: ${reader.body.toString().slice(0, 200)}`);
  // Held until the export waits for its reader (its buffers full), or ended within them.
  for (const deadline = performance.now() + 60_000; ; await new Promise((r) => setTimeout(r, 20))) {
    const [open, waiting] = [await metricValue(c.port, 'tickhouse_http_streams_open'), await metricValue(c.port, 'tickhouse_http_streams_waiting')];
    if (waiting >= 1 || open === 0) break;
    if (performance.now() > deadline) {
      violations.push('the export neither ended nor waited for its reader within 60 s');
      break;
    }
  }
  let lingering = false;
  return {
    description: `${description} → ${reader.status}`,
    violations,
    held: 1,
    release: async () => {
      reader.close();
      // Its stream ends with it (and its slot and engine query): the next case starts from a quiet service.
      for (const deadline = performance.now() + 30_000; (await metricValue(c.port, 'tickhouse_http_streams_open')) > 0; ) {
        if (performance.now() > deadline) {
          lingering = true;
          break;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    afterRelease: () => (lingering ? ['the export still ran 30 s after its reader left'] : []),
  };
}
