/** The order book as a domain module (ARCHITECTURE.md "Next layer"): no I/O, no HTTP. */
export { OrderBook, EMPTY_ASK, EMPTY_BID, sideOfOrder, type BookSide, type Level } from './order-book.js';
export { midpoint, quoteOf, roundPrice, spread, PRICE_DECIMALS, type Quote } from './quote.js';
export { executeMarketOrder, type Execution } from './execution.js';
export { DEFAULT_CHECKPOINTS, type CheckpointPolicy } from './checkpoints.js';
export type { BookState } from './book-state.js';
