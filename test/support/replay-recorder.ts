import type { Engine } from '../../src/clickhouse/engine.js';
import type { MarketEventRow, MarketRow, TickRow } from '../../src/clickhouse/rows.js';
import { Normalizer } from '../../src/ingest/normalizer.js';

/** A tick as the exactness rule of docs/TIME-MACHINE.md §1 compares it (plus the asset and the stored book side). */
export interface ComparedTick {
  asset_id: string;
  t: number;
  event: string;
  side: string;
  best_bid: number;
  best_ask: number;
  price: number;
  size: number;
  book_side: string;
  /** Trades: the fee rate and transaction hash (null / '' when none). */
  fee_rate_bps: number | null;
  tx_hash: string;
}

/** A market_events row as the exactness rule compares it: everything but seq and the receive time. */
export type ComparedMarketEvent = { asset_id: string; t: number; event: string; market: string; raw: string } & Record<string, unknown>;

/**
 * The recorder's normalizer fed with what a replay sends. The book arrays a subscription gets (the
 * initial books) update its books but their ticks are not recorded: the exactness rule covers the
 * frames after them. Market metadata comes from the store's `markets`, as the recorder gets it from
 * Gamma.
 */
export class ReplayRecorder {
  readonly ticks: ComparedTick[] = [];
  /** market_events rows of the frames after the book arrays, in arrival order. */
  readonly marketEvents: ComparedMarketEvent[] = [];
  /** Every text frame received, in order. */
  readonly frames: string[] = [];
  private inBookArray = false;
  private readonly normalizer: Normalizer;

  constructor(markets: MarketRow[]) {
    let seq = 0;
    this.normalizer = new Normalizer(
      {
        tick: (row: TickRow) => {
          if (!this.inBookArray) this.ticks.push(compared(row));
        },
        snapshot: () => {},
        market: () => {},
        bookCheck: () => {},
        capture: () => {},
        marketEvent: (row: MarketEventRow) => {
          if (!this.inBookArray) this.marketEvents.push(comparedEvent(row));
        },
      },
      { seq: () => seq++, checkpoints: false },
    );
    this.normalizer.addMarkets(markets);
  }

  push(text: string): void {
    this.frames.push(text);
    this.inBookArray = text.trimStart().startsWith('[');
    this.normalizer.push(text);
    this.inBookArray = false;
  }

  get malformed(): number {
    return this.normalizer.stats.malformed;
  }
}

function compared(r: TickRow): ComparedTick {
  return {
    asset_id: r.asset_id,
    t: r.t,
    event: r.event,
    side: r.side,
    best_bid: r.best_bid,
    best_ask: r.best_ask,
    price: r.price,
    size: r.size,
    book_side: r.book_side,
    fee_rate_bps: r.fee_rate_bps ?? null,
    tx_hash: r.tx_hash ?? '',
  };
}

/** Columns of market_events as a ComparedMarketEvent lists them, absent values as the table stores them. */
const EVENT_DEFAULTS = {
  old_tick_size: null,
  new_tick_size: null,
  best_bid: null,
  best_ask: null,
  spread: null,
  winning_asset_id: '',
  winning_outcome: '',
  outcome: '',
  neg_risk: null,
  fees_enabled: null,
  taker_base_fee: null,
  maker_base_fee: null,
  fee_rate: null,
  fee_exponent: null,
  fee_taker_only: null,
  fee_rebate_rate: null,
};

function comparedEvent(r: MarketEventRow): ComparedMarketEvent {
  const { seq: _seq, local_t: _localT, fees, ...row } = r;
  return { ...EVENT_DEFAULTS, ...row, ...fees };
}

/** The stored market_events of each asset in its (after, until] windows, of the given types, in (t, seq, asset) order. */
export async function storedMarketEvents(
  engine: Engine,
  windows: Record<string, [after: number, until: number][]>,
  events: readonly string[],
): Promise<ComparedMarketEvent[]> {
  const rows = await engine.rows<ComparedMarketEvent & { t: number }>(
    `SELECT asset_id, toUnixTimestamp64Milli(t) AS t, toString(event) AS event, toString(market) AS market, raw, ${Object.keys(EVENT_DEFAULTS).join(', ')}
     FROM market_events WHERE asset_id IN {ids:Array(String)} AND event IN {events:Array(String)} ORDER BY t, seq, asset_id
     SETTINGS output_format_json_quote_64bit_integers = 0`,
    { params: { ids: Object.keys(windows), events } },
  );
  return rows.filter((r) => windows[r.asset_id as string].some(([after, until]) => r.t > after && r.t <= until));
}

export async function storedMarkets(engine: Engine): Promise<MarketRow[]> {
  return engine.rows<MarketRow>(
    `SELECT asset_id, market, outcome, question, slug,` +
      ` toUnixTimestamp64Milli(updated_at) AS updated_at FROM markets FINAL SETTINGS output_format_json_quote_64bit_integers = 0`,
  );
}

/** The stored ticks of each asset within its own (after, until] windows, in (t, seq) order across assets. */
export async function storedTicks(engine: Engine, windows: Record<string, [after: number, until: number][]>): Promise<ComparedTick[]> {
  const rows = await engine.rows<ComparedTick & { seq: number }>(
    `SELECT asset_id, toUnixTimestamp64Milli(t) AS t, seq, toString(event) AS event, side, best_bid, best_ask, price, size, toString(book_side) AS book_side,
       fee_rate_bps, tx_hash
     FROM ticks WHERE asset_id IN {ids:Array(String)} ORDER BY t, seq
     SETTINGS output_format_json_quote_64bit_integers = 0`,
    { params: { ids: Object.keys(windows) } },
  );
  return rows.filter((r) => windows[r.asset_id].some(([after, until]) => r.t > after && r.t <= until)).map(({ seq: _seq, ...tick }) => tick);
}
