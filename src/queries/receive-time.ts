/**
 * A stored row's receive time (Tardis's `local_timestamp`, docs/TARDIS.md §1) in Unix µs, as a SQL
 * expression over a row of ticks or book_events: local_t, when the recorder received the row's frame
 * (clickhouse/011_receive_time_and_trades.sql; rows stored without one read their exchange time `t`,
 * exactly as a Tardis file marks a row the exchange gave no separate time for).
 */
export const RECEIVE_TIME_US = 'toUnixTimestamp64Micro(local_t)';
