/** The order book as a domain module (ARCHITECTURE.md "Next layer"): no I/O, no HTTP. */

export type { BookState } from './book-state.js';
export { type CheckpointPolicy, DEFAULT_CHECKPOINTS } from './checkpoints.js';
export { levelsDiffering } from './drift.js';
export { type Execution, executeMarketOrder } from './execution.js';
export { type BookSide, EMPTY_ASK, EMPTY_BID, type Level, OrderBook, sideOfOrder } from './order-book.js';
export { midpoint, PRICE_DECIMALS, type Quote, quoteOf, roundPrice, spread } from './quote.js';
