/**
 * The columns every RowBinary read of book_events selects, in the order BookEventDecoder
 * (src/book-history/event-decoder.ts) decodes them. A row carries its market only when it is not
 * {usual_market} (NULL otherwise): the decoder fills in the value bound there (see its comment).
 */
export const BINARY_EVENT_COLUMNS =
  'toUnixTimestamp64Milli(t) AS ms, kind, if(market = {usual_market:String}, NULL, toString(market)) AS other_market, price, size, book_side, bids, asks';
