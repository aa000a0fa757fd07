/**
 * Tardis's CSV datasets (docs/TARDIS.md §1): the data types tickhouse serves, their exact header
 * lines, and the file name the Tardis clients save them under. Headers are byte for byte those of
 * Tardis's own files (test/fixtures/tardis/ holds heads of real ones, and a test compares).
 */
export const TARDIS_EXCHANGE = 'polymarket';

export const TARDIS_DATA_TYPES = ['incremental_book_L2', 'trades', 'book_snapshot_25', 'book_snapshot_5', 'quotes'] as const;
export type TardisDataType = (typeof TARDIS_DATA_TYPES)[number];

const PREFIX = 'exchange,symbol,timestamp,local_timestamp';

/** `asks[0].price,asks[0].amount,bids[0].price,bids[0].amount,asks[1].price,…`: levels interleaved, asks first. */
function snapshotColumns(depth: number): string {
  return Array.from({ length: depth }, (_, i) => `asks[${i}].price,asks[${i}].amount,bids[${i}].price,bids[${i}].amount`).join(',');
}

/** The header line of a data type's file, its newline included. */
export function tardisHeader(type: TardisDataType): string {
  switch (type) {
    case 'incremental_book_L2':
      return `${PREFIX},is_snapshot,side,price,amount\n`;
    case 'trades':
      return `${PREFIX},id,side,price,amount\n`;
    case 'quotes':
      return `${PREFIX},ask_amount,ask_price,bid_price,bid_amount\n`;
    case 'book_snapshot_25':
      return `${PREFIX},${snapshotColumns(25)}\n`;
    case 'book_snapshot_5':
      return `${PREFIX},${snapshotColumns(5)}\n`;
  }
}

/** Levels per side of a book_snapshot_N file. */
export function snapshotDepth(type: 'book_snapshot_25' | 'book_snapshot_5'): number {
  return type === 'book_snapshot_25' ? 25 : 5;
}

/** `{exchange}_{data_type}_{YYYY-MM-DD}_{symbol}.csv.gz`: the name the Tardis clients give a download. */
export function tardisFileName(type: TardisDataType, day: string, symbol: string): string {
  return `${TARDIS_EXCHANGE}_${type}_${day}_${symbol}.csv.gz`;
}
