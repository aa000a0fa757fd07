/**
 * A stored row's receive time (Tardis's `local_timestamp`, docs/TARDIS.md §2) in Unix µs, as a SQL
 * expression over a row of ticks or book_events. The one place that says where it comes from: until
 * rows carry the time the recorder received their frame, it is the exchange's time `t`, exactly as a
 * Tardis file marks a row the exchange gave no separate time for (timestamp = local_timestamp).
 */
export const RECEIVE_TIME_US = 'toUnixTimestamp64Milli(t) * 1000';
