import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookStates } from '../src/book-history/fold.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

/**
 * A long read carries an event's market only when it is not the asset's usual one (the market of the
 * snapshot the read starts from); the decoder fills the usual one in. Every state must still carry
 * the market of the last event applied, whichever market that is, also when the read starts without
 * a snapshot (no usual market known: every row carries its own).
 */
let te: TestEngine;
const ASSET = '424242';
const T0 = 1_767_225_600_000;
const USUAL = '0xusual';
const OTHER = '0xother-market';

/** (ms offset, kind, market, price, size, book_side): a change from another market between two of the usual one. */
const EVENTS: [number, 'book' | 'price_change', string, number, number, 'BUY' | 'SELL' | ''][] = [
  [0, 'price_change', OTHER, 0.41, 5, 'BUY'],
  [1, 'price_change', '', 0.61, 7, 'SELL'],
  [2, 'book', USUAL, 0, 0, ''],
  [3, 'price_change', USUAL, 0.45, 10, 'BUY'],
  [4, 'price_change', OTHER, 0.46, 11, 'BUY'],
  [5, 'price_change', USUAL, 0.55, 12, 'SELL'],
  [6, 'price_change', 'é', 0.47, 13, 'BUY'],
];

beforeAll(async () => {
  te = await createTestEngine();
  const rows = EVENTS.map(
    ([dt, kind, market, price, size, side], seq) =>
      `('${ASSET}', fromUnixTimestamp64Milli(${T0 + dt}, 'UTC'), ${seq}, '${kind}', '${market}', ${price}, ${size}, '${side}',` +
      ` ${kind === 'book' ? '[(0.4, 1.0)]' : '[]'}, ${kind === 'book' ? '[(0.6, 2.0)]' : '[]'})`,
  );
  await te.engine.command(`INSERT INTO book_events (asset_id, t, seq, kind, market, price, size, book_side, bids, asks) VALUES ${rows.join(', ')}`);
}, 60_000);

afterAll(() => te?.close());

async function markets(from: number): Promise<[number, string, number][]> {
  const out: [number, string, number][] = [];
  for await (const _turn of bookStates(
    te.engine,
    { assetId: ASSET, from, to: T0 + 100 },
    (s) => void out.push([s.timestamp - T0, s.market, s.book.bestBid()]),
  ));
  return out;
}

describe('the market of every state of a long read', () => {
  it('starting at the snapshot: the usual market filled in, the others carried', async () => {
    expect(await markets(T0 + 3)).toEqual([
      [2, USUAL, 0.4],
      [3, USUAL, 0.45],
      [4, OTHER, 0.46],
      [5, USUAL, 0.46],
      [6, 'é', 0.47],
    ]);
  });

  it('starting before any snapshot: every row carries its own market, the empty one included', async () => {
    expect(await markets(T0)).toEqual([
      [0, OTHER, 0.41],
      [1, '', 0.41],
      [2, USUAL, 0.4],
      [3, USUAL, 0.45],
      [4, OTHER, 0.46],
      [5, USUAL, 0.46],
      [6, 'é', 0.47],
    ]);
  });
});
