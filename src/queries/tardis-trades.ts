import type { Readable } from 'node:stream';
import type { Engine } from '../clickhouse/engine.js';
import { plainNumberSql } from './plain-number-sql.js';
import { RECEIVE_TIME_US } from './receive-time.js';

/**
 * The rows of a Tardis `trades` file (docs/TARDIS.md §1.2), formatted by the engine: every
 * `last_trade_price` of one asset in [start, end), in (t, seq) order (the primary key's: one range
 * read, already sorted), as `exchange,symbol,timestamp,local_timestamp,id,side,price,amount` lines.
 * `side` is the taker side Polymarket sent, lower-cased (`unknown` for trades stored before it was
 * kept); `id` the trade's transaction hash (empty when none was stored: Tardis's "no id").
 */
const TRADES_SQL = `
SELECT {exchange:String}, asset_id, toUnixTimestamp64Milli(t) * 1000, ${RECEIVE_TIME_US}, tx_hash,
       if(book_side = '', 'unknown', lower(toString(book_side))), ${plainNumberSql('price')}, ${plainNumberSql('size')}
FROM ticks
WHERE asset_id = {asset_id:String} AND event = 'last_trade_price'
  AND t >= fromUnixTimestamp64Milli({start:Int64}, 'UTC') AND t < fromUnixTimestamp64Milli({end:Int64}, 'UTC')
ORDER BY t, seq
-- Each column as it is (no quotes, no escapes: asset ids are digits, the rest fixed words and
-- numbers), separated by commas: the file's lines as they are sent.
SETTINGS format_custom_escaping_rule = 'Raw', format_custom_field_delimiter = ','`;

export function streamTardisTrades(engine: Engine, q: { exchange: string; assetId: string; start: number; end: number }, signal?: AbortSignal): Readable {
  return engine.stream(TRADES_SQL, 'CustomSeparated', { params: { exchange: q.exchange, asset_id: q.assetId, start: q.start, end: q.end }, signal });
}
