import type { BookSide, OrderBook } from './order-book.js';

/**
 * The drift check of docs/TIME-MACHINE.md §4: the number of price levels, over both sides, whose size
 * differs between two books (a level absent from one book has size 0 there). 0 = identical.
 */
export function levelsDiffering(a: OrderBook, b: OrderBook): number {
  return sideDiffering(a, b, 'bid') + sideDiffering(a, b, 'ask');
}

/** Both sides are sorted best first, so one merge walk visits every price once. */
function sideDiffering(a: OrderBook, b: OrderBook, side: BookSide): number {
  const x = a.levels(side);
  const y = b.levels(side);
  const first = side === 'bid' ? (p: number, q: number) => p > q : (p: number, q: number) => p < q;
  let i = 0;
  let j = 0;
  let differing = 0;
  while (i < x.length || j < y.length) {
    if (j === y.length || (i < x.length && first(x[i].price, y[j].price))) {
      i++;
      differing++;
    } else if (i === x.length || first(y[j].price, x[i].price)) {
      j++;
      differing++;
    } else {
      if (x[i].size !== y[j].size) differing++;
      i++;
      j++;
    }
  }
  return differing;
}
