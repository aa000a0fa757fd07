import type { MarketRow } from '../../clickhouse/rows.js';
import { isRecord } from '../../ingest/wire-values.js';
import { type KalshiCredentials, signedHeaders } from './auth.js';
import { kalshiAssetId } from './ids.js';

/** Kalshi answered a request with 401/403: the key is wrong, not the network. */
export class KalshiAuthError extends Error {}

/** Markets per page asked (Kalshi's maximum). */
const PAGE = 1000;

/**
 * Market discovery over REST: `GET /markets?status=open` page by page (`cursor` = the previous page's
 * `cursor`, empty on the last page), or `?tickers=A,B` for given tickers; every request signed. Each
 * market becomes one `markets` row: id `kalshi:<ticker>`, outcome `Yes` (ticks are labelled YES), the
 * question its title (else its YES subtitle), the slug its event ticker.
 */
export async function fetchMarkets(restUrl: string, credentials: KalshiCredentials, tickers: readonly string[] | null, maxMarkets = 0): Promise<MarketRow[]> {
  const rows: MarketRow[] = [];
  let cursor = '';
  for (let page = 0; page < 100_000; page++) {
    const url = new URL(`${restUrl.replace(/\/+$/, '')}/markets`);
    url.searchParams.set('limit', String(PAGE));
    if (tickers) url.searchParams.set('tickers', tickers.join(','));
    else url.searchParams.set('status', 'open');
    if (cursor) url.searchParams.set('cursor', cursor);
    const res = await fetch(url, { headers: { accept: 'application/json', ...signedHeaders(credentials, 'GET', url.pathname) } });
    if (res.status === 401 || res.status === 403)
      throw new KalshiAuthError(`Kalshi refused the API key (HTTP ${res.status} from GET ${url.pathname}): ${(await res.text()).slice(0, 200)}`);
    if (!res.ok) throw new Error(`Kalshi GET ${url.pathname} answered HTTP ${res.status}`);
    const body: unknown = await res.json();
    if (!isRecord(body) || !Array.isArray(body.markets)) throw new Error(`Kalshi GET ${url.pathname}: no markets array in the answer`);
    for (const m of body.markets) {
      const row = marketRow(m);
      if (row) rows.push(row);
      if (maxMarkets > 0 && rows.length >= maxMarkets) return rows;
    }
    cursor = typeof body.cursor === 'string' ? body.cursor : '';
    if (!cursor) return rows;
  }
  return rows;
}

function marketRow(m: unknown): MarketRow | null {
  if (!isRecord(m) || typeof m.ticker !== 'string') return null;
  let id: string;
  try {
    id = kalshiAssetId(m.ticker);
  } catch {
    return null;
  }
  const question = typeof m.title === 'string' && m.title !== '' ? m.title : typeof m.yes_sub_title === 'string' ? m.yes_sub_title : '';
  const updated = typeof m.updated_time === 'string' ? Date.parse(m.updated_time) : NaN;
  return {
    asset_id: id,
    market: id,
    outcome: 'Yes',
    question,
    slug: typeof m.event_ticker === 'string' ? m.event_ticker : '',
    updated_at: Number.isFinite(updated) ? updated : 0,
  };
}
