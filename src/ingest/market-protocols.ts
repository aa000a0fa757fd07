import type { Engine } from '../clickhouse/engine.js';
import type { ProtocolRow, ProtocolVersion } from '../clickhouse/rows.js';

/**
 * The `market_protocols` table (migration 050): the protocol version Gamma states for each token's
 * market, written wherever Gamma metadata is taken in (the recorder's discovery, `npm run ingest --
 * replay --markets`, the demo) and read beside `markets` (src/queries/clob.ts).
 */

/** Ids per lookup: the bound array travels in the URL of a server engine (as in queries/clob.ts). */
const IDS_PER_QUERY = 100;

/**
 * Stores the rows not stored already (same token, version and `updated_at`): the table keeps no
 * deduplication window, so taking the same metadata in twice adds nothing.
 */
export async function storeProtocols(engine: Engine, rows: readonly ProtocolRow[]): Promise<number> {
  const stored = new Set<string>();
  const ids = [...new Set(rows.map((r) => r.asset_id))];
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
    const existing = await engine.rows<{ asset_id: string; protocol_version: string; updated_at: string | number }>(
      `SELECT asset_id, protocol_version, toUnixTimestamp64Milli(updated_at) AS updated_at FROM market_protocols
       WHERE asset_id IN {ids:Array(String)}`,
      { params: { ids: ids.slice(i, i + IDS_PER_QUERY) } },
    );
    for (const r of existing) stored.add(keyOf(r.asset_id, r.protocol_version, Number(r.updated_at)));
  }
  const fresh = rows.filter((r) => {
    const key = keyOf(r.asset_id, r.protocol_version, r.updated_at);
    if (stored.has(key)) return false;
    stored.add(key);
    return true;
  });
  if (fresh.length > 0) await engine.insertJsonEachRow('market_protocols', fresh.map((r) => JSON.stringify(r)).join('\n'));
  return fresh.length;
}

/** The protocol version of each token that has one stored (the newest row per token). */
export async function protocolsOf(engine: Engine, assetIds: readonly string[], signal?: AbortSignal): Promise<Map<string, ProtocolVersion>> {
  const out = new Map<string, ProtocolVersion>();
  const ids = [...new Set(assetIds)];
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
    const rows = await engine.rows<{ asset_id: string; protocol_version: ProtocolVersion }>(
      'SELECT asset_id, protocol_version FROM market_protocols FINAL WHERE asset_id IN {ids:Array(String)}',
      { params: { ids: ids.slice(i, i + IDS_PER_QUERY) }, signal },
    );
    for (const r of rows) out.set(r.asset_id, r.protocol_version);
  }
  return out;
}

function keyOf(asset: string, version: string, updatedAt: number): string {
  return `${asset}\u0000${version}\u0000${updatedAt}`;
}
