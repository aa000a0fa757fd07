import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local Gamma `/markets`: the `active` / `closed` filters, `clob_token_ids` lookups, and
 * pagination by `offset` / `limit` (default 20, at most 500, like Gamma). Market objects are served
 * as given, so `outcomes` / `clobTokenIds` stay JSON-encoded strings.
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

export async function startGammaServer(initial: Record<string, unknown>[] = []): Promise<GammaServer> {
  let markets = initial;
  let failure: number | null = null;
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const url = new URL(req.url ?? '/', 'http://gamma');
    if (failure !== null) {
      res.writeHead(failure, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'unavailable' }));
      return;
    }
    if (url.pathname !== '/markets') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found' }));
      return;
    }
    const q = url.searchParams;
    const tokens = q.getAll('clob_token_ids');
    const selected = markets.filter(
      (m) =>
        (!q.has('active') || m.active === (q.get('active') === 'true')) &&
        (!q.has('closed') || m.closed === (q.get('closed') === 'true')) &&
        (tokens.length === 0 || tokensOf(m).some((t) => tokens.includes(t))),
    );
    const limit = Math.min(500, Number(q.get('limit') ?? 20));
    const offset = Number(q.get('offset') ?? 0);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(selected.slice(offset, offset + limit)));
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

function tokensOf(m: Record<string, unknown>): string[] {
  const v = typeof m.clobTokenIds === 'string' ? JSON.parse(m.clobTokenIds) : m.clobTokenIds;
  return Array.isArray(v) ? v.map(String) : [];
}
