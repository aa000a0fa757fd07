import { type Agent, request } from 'node:http';
import type { Engine } from '../../src/clickhouse/engine.js';

/**
 * What several bench modules do the same way: one keep-alive GET whose body is discarded, and the raw
 * engine's JSON insert of the tick rows a run stored (the baseline of the ingest and recorder rows).
 */

/** One GET on `agent`, its body read and dropped; anything but a 200 rejects. */
export function httpGet(agent: Agent, url: URL, path: string, apiKey: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, agent, headers: { authorization: `Bearer ${apiKey}` } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${path.split('?')[0]} answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The tick rows in `engine` (seq shifted so deduplication does not drop them), serialized beforehand as
 * JSONEachRow, then inserted again by the engine alone in batches of `batchRows`: the seconds that
 * insert took, and how many rows it was.
 */
export async function rawJsonInsert(engine: Engine, batchRows: number): Promise<{ rawSeconds: number; rawTicks: number }> {
  const text = (
    await engine.rows<{ line: string }>(
      "SELECT formatRow('JSONEachRow', asset_id, t, seq + 1 AS seq, event, side, best_bid, best_ask, price, size, market) AS line FROM ticks ORDER BY " +
        'asset_id, t, seq',
    )
  ).map((r) => r.line.trimEnd());
  const started = performance.now();
  for (let i = 0; i < text.length; i += batchRows) {
    await engine.insertJsonEachRow('ticks', text.slice(i, i + batchRows).join('\n'), { deduplicate_blocks_in_dependent_materialized_views: 1 });
  }
  return { rawSeconds: (performance.now() - started) / 1000, rawTicks: text.length };
}
