import type { MarketRow } from '../../clickhouse/rows.js';
import { type GammaMarket, parseGammaMarkets } from '../gamma.js';
import { isRecord } from '../wire-values.js';

/** Gamma's largest page. */
const PAGE_SIZE = 500;
/** Token ids per `clob_token_ids` lookup: keeps the query string far below URL limits. */
const LOOKUP_CHUNK = 50;
const TIMEOUT_MS = 20_000;

/**
 * Every active, open market that has an order book, paged through Gamma's `/markets` by `offset`,
 * as one MarketRow per outcome token. With `maxAssets` > 0, paging stops once that many tokens are
 * known and the list is cut there.
 */
export async function discoverActiveMarkets(gammaUrl: string, maxAssets = 0): Promise<MarketRow[]> {
  const rows: MarketRow[] = [];
  for (let offset = 0; ; offset += PAGE_SIZE) {
    const page = await getMarkets(gammaUrl, new URLSearchParams({ active: 'true', closed: 'false', limit: String(PAGE_SIZE), offset: String(offset) }));
    const tradable = page.filter((m) => isRecord(m) && m.active === true && m.closed !== true && m.enableOrderBook === true);
    rows.push(...parseGammaMarkets(tradable).rows);
    if (page.length < PAGE_SIZE || (maxAssets > 0 && rows.length >= maxAssets)) break;
  }
  return maxAssets > 0 ? rows.slice(0, maxAssets) : rows;
}

/** Metadata of explicit tokens (`--assets`), looked up by `clob_token_ids`; tokens Gamma does not know are left out. */
export async function lookupMarkets(gammaUrl: string, assets: readonly string[]): Promise<MarketRow[]> {
  const wanted = new Set(assets);
  const rows: MarketRow[] = [];
  for (let i = 0; i < assets.length; i += LOOKUP_CHUNK) {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    for (const a of assets.slice(i, i + LOOKUP_CHUNK)) query.append('clob_token_ids', a);
    rows.push(...parseGammaMarkets(await getMarkets(gammaUrl, query)).rows.filter((r) => wanted.has(r.asset_id)));
  }
  return rows;
}

async function getMarkets(gammaUrl: string, query: URLSearchParams): Promise<GammaMarket[]> {
  const url = `${gammaUrl}/markets?${query}`;
  const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS), headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`Gamma ${url} answered ${res.status}`);
  const body: unknown = await res.json();
  if (!Array.isArray(body)) throw new Error(`Gamma ${url} did not answer a JSON array`);
  return body as GammaMarket[];
}
