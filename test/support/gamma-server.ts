import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local Gamma. `/markets/keyset` as Polymarket documents it (docs.polymarket.com, "List markets (keyset
 * pagination)"; the official clients' use of it): `limit` (≤ 1000), `after_cursor` = the previous page's
 * `next_cursor`, filters `closed` (default false), `active`, `clob_token_ids`, `position_ids`; the answer
 * `{"markets": [...], "next_cursor": "…"}` without `next_cursor` on the last page; `offset` is refused
 * (422). The legacy `/markets` (offset / limit ≤ 500, default 20) is kept for old callers. Market
 * objects are served as given, so `outcomes` / `clobTokenIds` stay JSON-encoded strings.
 */
export interface GammaServer {
  url: string;
  /** Request paths with their query strings, in order. */
  requests: string[];
  setMarkets(markets: Record<string, unknown>[]): void;
  /** While set, every request answers this status with an error body. */
  failWith(status: number | null): void;
  close(): Promise<void>;
}

const KEYSET_MAX_LIMIT = 1000;

export async function startGammaServer(initial: Record<string, unknown>[] = []): Promise<GammaServer> {
  let markets = initial;
  let failure: number | null = null;
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const url = new URL(req.url ?? '/', 'http://gamma');
    const [status, body] =
      failure !== null
        ? [failure, { error: 'unavailable' }]
        : url.pathname === '/markets/keyset'
          ? keyset(markets, url.searchParams)
          : url.pathname === '/markets'
            ? [200, legacy(markets, url.searchParams)]
            : [404, { error: 'not found' }];
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    setMarkets(m) {
      markets = m;
    },
    failWith(status) {
      failure = status;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A JSON-encoded string of ids or an array of them. */
function idsOf(v: unknown): string[] {
  const list = typeof v === 'string' ? JSON.parse(v) : v;
  return Array.isArray(list) ? list.map(String) : [];
}

/** `/markets/keyset`: a page after the cursor, `next_cursor` while more follow (an opaque base64url of the position). */
function keyset(markets: Record<string, unknown>[], q: URLSearchParams): [number, unknown] {
  if (q.has('offset')) return [422, { error: 'offset is not supported by keyset pagination; use after_cursor' }];
  const limit = Number(q.get('limit') ?? 20);
  if (!Number.isInteger(limit) || limit < 1 || limit > KEYSET_MAX_LIMIT) return [422, { error: `limit must be 1..${KEYSET_MAX_LIMIT}` }];
  const cursor = q.get('after_cursor');
  const start =
    cursor === null
      ? 0
      : Number(
          Buffer.from(cursor, 'base64url')
            .toString()
            .replace(/^after:/, ''),
        );
  if (!Number.isInteger(start) || start < 0) return [400, { error: 'invalid cursor' }];
  // Lookups by id ignore the default closed filter, as a client asking for given ids expects.
  const byIds = q.has('clob_token_ids') || q.has('position_ids');
  const selected = markets.filter((m) => matches(m, q, byIds ? null : false));
  const page = selected.slice(start, start + limit);
  const end = start + page.length;
  return [200, end < selected.length ? { markets: page, next_cursor: Buffer.from(`after:${end}`).toString('base64url') } : { markets: page }];
}

/** The legacy `/markets`: a JSON array, offset / limit (≤ 500, default 20). */
function legacy(markets: Record<string, unknown>[], q: URLSearchParams): unknown[] {
  const limit = Math.min(500, Number(q.get('limit') ?? 20));
  const offset = Number(q.get('offset') ?? 0);
  return markets.filter((m) => matches(m, q, null)).slice(offset, offset + limit);
}

/** The `active`, `closed` (`closedDefault` when absent; null = any), `clob_token_ids` and `position_ids` filters. */
function matches(m: Record<string, unknown>, q: URLSearchParams, closedDefault: boolean | null): boolean {
  const tokens = q.getAll('clob_token_ids');
  const positions = q.getAll('position_ids');
  if (q.has('active') && m.active !== (q.get('active') === 'true')) return false;
  if (q.has('closed') ? m.closed !== (q.get('closed') === 'true') : closedDefault !== null && m.closed !== closedDefault) return false;
  if (tokens.length > 0 && !idsOf(m.clobTokenIds).some((t) => tokens.includes(t))) return false;
  return positions.length === 0 || idsOf(m.positionIds).some((t) => positions.includes(t));
}
