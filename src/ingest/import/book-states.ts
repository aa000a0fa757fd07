import { type Level, OrderBook } from '../../book/index.js';
import type { Engine } from '../../clickhouse/engine.js';

/**
 * State carried across files (docs/INGEST.md §6.5): an hour (a day) of an archive is not a fresh start.
 * Each asset's book, its checkpoint counter and its last snapshot time continue from the unit that ends
 * where this one begins: from the previous unit of the same import (kept here in memory), else from what
 * an earlier import left in `import_book_states` (clickhouse/040_import_ledger.sql) at that instant. So
 * the first `book` of an hour is drift-checked and a quiet asset keeps its checkpoint every 200 changes.
 * Across a hole (no unit ends where this one begins) books start over, as after a recorder's reconnect.
 */
export interface BookState {
  assetId: string;
  book: OrderBook | null;
  /** The book descends from a `book` (or a checkpoint of one): it holds every level, checkpoints allowed. */
  grounded: boolean;
  market: string;
  /** price_change items applied since the last snapshot. */
  changes: number;
  /** Event time of the last snapshot. */
  snapshotT: number;
}

export function freshState(assetId: string, market: string): BookState {
  return { assetId, book: null, grounded: false, market, changes: 0, snapshotT: 0 };
}

interface StoredState {
  ak: number;
  asset_id: string;
  market: string;
  grounded: number;
  changes: number;
  snapshot_t: number;
  has_book: number;
  bids: [number, number][];
  asks: [number, number][];
}

const levels = (pairs: [number, number][]): Level[] => pairs.map(([price, size]) => ({ price, size }));
const pairs = (ls: readonly Level[]): string => `[${ls.map((l) => `[${l.price},${l.size}]`).join(',')}]`;

export class BookStates {
  /** The instant the states in memory are as of (the end of the last unit imported), -1 for none. */
  private asOf = -1;
  private states = new Map<number, BookState>();
  /** The last unit left some of its assets' states unknown: the store may know them (an earlier import). */
  private partial = false;

  constructor(private readonly engine: Engine) {}

  /**
   * The states as the unit starting at `from` begins, keyed by asset key (events.ts `ak`): those the
   * previous unit of this import ended with when it ended at `from`, else what the store holds as of `from`.
   */
  async at(from: number): Promise<Map<number, BookState>> {
    if (from < 0) return new Map();
    if (this.asOf === from && !this.partial) return this.states;
    const rows = await this.engine.rows<StoredState>(
      `SELECT bitShiftRight(cityHash64(asset_id), 11) AS ak, asset_id, market, grounded, changes, toUnixTimestamp64Milli(snapshot_t) AS snapshot_t,
         has_book, bids, asks
       FROM import_book_states
       WHERE as_of = fromUnixTimestamp64Milli({from:Int64}, 'UTC')
       LIMIT 1 BY asset_id`,
      { params: { from } },
    );
    const stored = new Map(
      rows.map((r) => [
        Number(r.ak),
        {
          assetId: r.asset_id,
          book: r.has_book ? OrderBook.of(levels(r.bids), levels(r.asks)) : null,
          grounded: r.grounded === 1,
          market: r.market,
          changes: Number(r.changes),
          snapshotT: Number(r.snapshot_t),
        },
      ]),
    );
    // What this import folded itself is newer than what an earlier import stored.
    if (this.asOf === from) for (const [ak, s] of this.states) stored.set(ak, s);
    this.states = stored;
    this.asOf = from;
    this.partial = false;
    return this.states;
  }

  /**
   * After a unit that ends at `to`: these states are what the next unit begins with, in memory and in
   * the store for a later import (an asset the unit did not name carries its state on unchanged).
   * `unknown`: assets the unit names but did not fold (not asked for): their state is not known.
   */
  async save(to: number, states: Map<number, BookState>, unknown: ReadonlySet<number>): Promise<void> {
    for (const ak of unknown) states.delete(ak);
    const lines: string[] = [];
    const flush = async () => {
      if (lines.length > 0) await this.engine.insertJsonEachRow('import_book_states', lines.splice(0).join('\n'));
    };
    for (const s of states.values()) {
      lines.push(
        `{"asset_id":${JSON.stringify(s.assetId)},"as_of":${to},"market":${JSON.stringify(s.market)},"grounded":${s.grounded ? 1 : 0},"changes":${s.changes},` +
          `"snapshot_t":${s.snapshotT},"has_book":${s.book ? 1 : 0},"bids":${pairs(s.book?.side('bid') ?? [])},"asks":${pairs(s.book?.side('ask') ?? [])}}`,
      );
      if (lines.length >= 5000) await flush();
    }
    await flush();
    this.states = states;
    this.asOf = to;
    this.partial = unknown.size > 0;
  }

  /** Forget the states in memory (a unit failed: its end state is not what the file leaves). */
  reset(): void {
    this.asOf = -1;
    this.states = new Map();
  }
}
