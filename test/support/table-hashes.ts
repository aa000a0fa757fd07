import { EmbeddedEngine } from '../../src/clickhouse/embedded.js';
import type { Engine } from '../../src/clickhouse/engine.js';

/**
 * Per table: row count and an order-independent sum of row hashes, equal only for equal multisets of
 * rows (each row hashed as one tuple: cityHash64 of columns is NULL when one is, and sum() skips NULLs).
 * markets (ReplacingMergeTree) and the rollups are read merged, so a background merge changes nothing.
 */
export const HASHED: Record<string, string> = {
  ticks: 'ticks',
  book_snapshots: 'book_snapshots',
  book_events: 'book_events',
  market_events: 'market_events',
  book_checks: 'book_checks',
  capture_events: 'capture_events',
  markets: '(SELECT DISTINCT * FROM markets)',
  ticks_1d: '(SELECT asset_id, day, sum(ticks) FROM ticks_1d GROUP BY asset_id, day)',
  candles_1m: '(SELECT asset_id, bucket, min(open), max(high), min(low), max(close), sum(volume) FROM candles_1m GROUP BY asset_id, bucket)',
  asset_stats:
    '(SELECT asset_id, any(market), min(first_seen), max(last_seen), sum(total_ticks), sum(price_change_ticks), sum(book_ticks), sum(last_trade_ticks) ' +
    'FROM asset_stats GROUP BY asset_id)',
};

export async function tableHashes(engine: Engine): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, from] of Object.entries(HASHED)) {
    const [r] = await engine.rows<{ n: string; h: string }>(`SELECT toString(count()) AS n, toString(sum(cityHash64(tuple(*)))) AS h FROM ${from}`);
    out[name] = `${r.n}:${r.h}`;
  }
  return out;
}

// As a script (`node --import tsx test/support/table-hashes.ts <DATA_DIR>`): the hashes of an embedded store, as JSON.
if (process.argv[1]?.endsWith('table-hashes.ts')) {
  const engine = EmbeddedEngine.open(process.argv[2], 1);
  process.stdout.write(JSON.stringify(await tableHashes(engine)));
  await engine.close();
}
