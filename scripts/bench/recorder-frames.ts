/**
 * The recorder bench's feed: an initial dump of books, then current-generation `price_change` frames
 * of ITEMS_PER_FRAME items each over ASSETS assets, deterministic so the run and its raw-engine
 * baseline see the same rows.
 */
export const ASSETS = Array.from({ length: 100 }, (_, i) => String(9_000_000 + i));
export const ITEMS_PER_FRAME = 5;

export function benchFrames(frames: number, start = 1_767_000_000_000): { dump: string; frames: string[] } {
  const levels = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => ({ price: String((from + k) / 100), size: String(100 + k) }));
  const dump = JSON.stringify(
    ASSETS.map((asset_id) => ({
      event_type: 'book',
      asset_id,
      market: `0x${asset_id}`,
      timestamp: String(start),
      hash: 'h',
      bids: levels(1, 49),
      asks: levels(51, 99),
    })),
  );
  const out: string[] = [];
  for (let i = 0; i < frames; i++) {
    const asset = ASSETS[i % ASSETS.length];
    const items = Array.from({ length: ITEMS_PER_FRAME }, (_, k) => {
      const bid = (i + k) % 2 === 0;
      const cents = bid ? 1 + ((i * 7 + k) % 49) : 51 + ((i * 11 + k) % 49);
      return {
        asset_id: asset,
        price: String(cents / 100),
        size: String((i + k) % 10 === 0 ? 0 : 10 + ((i * 13 + k) % 500)),
        side: bid ? 'BUY' : 'SELL',
        hash: 'h',
        best_bid: '0.49',
        best_ask: '0.51',
      };
    });
    out.push(JSON.stringify({ market: `0x${asset}`, price_changes: items, timestamp: String(start + 1 + Math.floor(i / 10)), event_type: 'price_change' }));
  }
  return { dump, frames: out };
}
