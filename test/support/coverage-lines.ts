/**
 * Lines of a recorder archive written by hand, for coverage tests: capture records in the archive
 * format of docs/TIME-MACHINE.md §4 as the recorder writes them, and Polymarket `book` / `price_change`
 * frames.
 */
export type Pair = [string, string];

export function capture(kind: string, t: number, run: string, socket: number, assets: string[] = []): string {
  return JSON.stringify({ event_type: 'tickhouse_capture', kind, t, run, socket, assets });
}

export function bookFrame(asset: string, t: number, bids: Pair[], asks: Pair[]): string {
  const levels = (l: Pair[]) => l.map(([price, size]) => ({ price, size }));
  return JSON.stringify({ event_type: 'book', market: '0xm', asset_id: asset, timestamp: String(t), hash: 'h', bids: levels(bids), asks: levels(asks) });
}

export function changeFrame(asset: string, t: number, side: 'BUY' | 'SELL', price: string, size: string): string {
  return JSON.stringify({
    event_type: 'price_change',
    market: '0xm',
    timestamp: String(t),
    price_changes: [{ asset_id: asset, price, size, side, hash: 'h' }],
  });
}
