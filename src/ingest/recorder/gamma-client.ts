import { type GammaParse, parseGammaMarkets } from '../gamma.js';
import { isRecord } from '../wire-values.js';

/**
 * Markets per keyset page. NautilusTrader's Gamma client notes that `/markets/keyset` accepts at most
 * 100 items per page (its `/markets` predecessor took 500); 100 works whatever the current cap is.
 */
const PAGE_SIZE = 100;
/** Token ids per lookup: keeps the query string far below URL limits. */
const LOOKUP_CHUNK = 50;
const TIMEOUT_MS = 20_000;
/** A walk that has not ended after this many pages is a server looping on its cursor, not a venue. */
const MAX_PAGES = 10_000;

/** One `/markets/keyset` page: `{markets: [...], next_cursor}`, `next_cursor` absent on the last page. */
interface KeysetPage {
  markets: unknown[];
  nextCursor: string | null;
}

/**
 * Every live market (open, with an order book) through Gamma's keyset pages (`/markets/keyset?closed=false`,
 * `after_cursor` = the previous page's `next_cursor`), parsed by version (gamma.ts). With `maxAssets` > 0
 * the walk stops once that many tokens are known and the list is cut there; `complete` says whether
 * the walk saw every page (only a complete walk may tell which subscribed markets left).
 */
export async function discoverLiveMarkets(gammaUrl: string, maxAssets = 0): Promise<GammaParse & { complete: boolean }> {
  const out: GammaParse & { complete: boolean } = { rows: [], protocols: [], invalid: 0, problems: [], complete: false };
  let cursor: string | null = null;
  const cursors = new Set<string>();
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ closed: 'false', limit: String(PAGE_SIZE) });
    if (cursor !== null) query.set('after_cursor', cursor);
    const { markets, nextCursor } = await getKeysetPage(gammaUrl, query);
    const parsed = parseGammaMarkets(markets.filter(isTradable));
    out.rows.push(...parsed.rows);
    out.protocols.push(...parsed.protocols);
    out.invalid += parsed.invalid;
    out.problems.push(...parsed.problems);
    if (maxAssets > 0 && out.rows.length >= maxAssets) {
      out.rows.length = Math.min(out.rows.length, maxAssets);
      out.protocols.length = out.rows.length;
      return out;
    }
    if (nextCursor === null) {
      out.complete = true;
      return out;
    }
    // A cursor seen before would walk the same pages forever (a server that ignores it answers page 1 again).
    if (cursors.has(nextCursor)) throw new Error(`Gamma ${gammaUrl}/markets/keyset answered a next_cursor it gave before`);
    cursors.add(nextCursor);
    cursor = nextCursor;
  }
  throw new Error(`Gamma ${gammaUrl}/markets/keyset did not end after ${MAX_PAGES} pages`);
}

/**
 * Metadata of explicit tokens (`--assets`), looked up by `clob_token_ids` (v1 markets), then the tokens
 * still unknown by `position_ids` (v2 markets); tokens Gamma does not know are left out.
 */
export async function lookupMarkets(gammaUrl: string, assets: readonly string[]): Promise<GammaParse> {
  const out: GammaParse = { rows: [], protocols: [], invalid: 0, problems: [] };
  const take = (parsed: GammaParse, wanted: Set<string>) => {
    parsed.rows.forEach((row, i) => {
      if (!wanted.delete(row.asset_id)) return;
      out.rows.push(row);
      out.protocols.push(parsed.protocols[i]);
    });
    out.problems.push(...parsed.problems);
    out.invalid += parsed.invalid;
  };
  const unknown = new Set(assets);
  for (const field of ['clob_token_ids', 'position_ids'] as const) {
    const ids = [...unknown];
    for (let i = 0; i < ids.length; i += LOOKUP_CHUNK) {
      const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
      for (const a of ids.slice(i, i + LOOKUP_CHUNK)) query.append(field, a);
      take(parseGammaMarkets((await getKeysetPage(gammaUrl, query)).markets), unknown);
    }
    if (unknown.size === 0) break;
  }
  return out;
}

/** Markets whose tokens trade on the CLOB now (what a recorder can subscribe to). */
function isTradable(m: unknown): boolean {
  return isRecord(m) && m.active === true && m.closed !== true && m.enableOrderBook === true;
}

async function getKeysetPage(gammaUrl: string, query: URLSearchParams): Promise<KeysetPage> {
  const url = `${gammaUrl}/markets/keyset?${query}`;
  const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS), headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`Gamma ${url} answered ${res.status}`);
  const body: unknown = await res.json();
  if (!isRecord(body) || !Array.isArray(body.markets)) throw new Error(`Gamma ${url} did not answer {"markets": [...], "next_cursor"}`);
  const next = body.next_cursor;
  if (next !== undefined && next !== null && (typeof next !== 'string' || next === ''))
    throw new Error(`Gamma ${url} answered a next_cursor that is not a string`);
  return { markets: body.markets, nextCursor: typeof next === 'string' ? next : null };
}
