import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Env, Hono } from 'hono';
import { acceptedEncodings } from '../http/accept-encoding.js';
import { PLANS } from '../plans.js';

/**
 * Serves the web dashboard: `/` and a closed list of files under `/assets/`. The page talks to the
 * public API only, like any other client. Only names listed in ASSETS are ever read from disk, so a
 * request path can never reach another file (no directory traversal by construction).
 */

const here = dirname(fileURLToPath(import.meta.url));
const chartsDist = join(dirname(createRequire(import.meta.url).resolve('lightweight-charts/package.json')), 'dist');

/** Our own files have unversioned URLs: the browser revalidates every time (a 304 thanks to the ETag). */
const REVALIDATE = 'no-cache';
/** The chart library changes only with package.json; a day of caching spares phones 170 kB. */
const LIBRARY = 'public, max-age=86400';

const JS = 'text/javascript; charset=utf-8';

type Source = { path: string } | { build: () => string };
interface AssetSpec {
  source: Source;
  type: string;
  cache: string;
}

const own = (file: string, type: string): AssetSpec => ({ source: { path: join(here, file) }, type, cache: REVALIDATE });

const ASSETS: Record<string, AssetSpec> = {
  'style.css': own('style.css', 'text/css; charset=utf-8'),
  'app.js': own('app.js', JS),
  'api.js': own('api.js', JS),
  'dom.js': own('dom.js', JS),
  'format.js': own('format.js', JS),
  'account-view.js': own('account-view.js', JS),
  'markets-view.js': own('markets-view.js', JS),
  'asset-view.js': own('asset-view.js', JS),
  'candles-chart.js': own('candles-chart.js', JS),
  'order-book.js': own('order-book.js', JS),
  'coverage-strip.js': own('coverage-strip.js', JS),
  'execution-calculator.js': own('execution-calculator.js', JS),
  'export-builder.js': own('export-builder.js', JS),
  'replay-control.js': own('replay-control.js', JS),
  'lightweight-charts.js': {
    source: { path: join(chartsDist, 'lightweight-charts.standalone.production.js') },
    type: JS,
    cache: LIBRARY,
  },
  // The plan table travels to the page from the one typed constant (docs/API.md §2), never copied by hand.
  'plans.json': {
    source: { build: () => JSON.stringify(Object.entries(PLANS).map(([name, p]) => ({ name, ...p }))) },
    type: 'application/json; charset=utf-8',
    cache: REVALIDATE,
  },
};

const INDEX: AssetSpec = own('index.html', 'text/html; charset=utf-8');

/**
 * The page loads nothing from other origins: scripts, styles, fonts, images and API calls all stay
 * on 'self'. Inline styles are allowed because the chart library positions its canvases with them.
 */
const PAGE_HEADERS = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'Referrer-Policy': 'no-referrer',
};

interface Loaded {
  body: Buffer;
  gzip: Buffer;
  etag: string;
}

/** Files are read once per process and kept with their gzip form and a content hash for the ETag. */
const loaded = new Map<AssetSpec, Promise<Loaded>>();

function load(spec: AssetSpec): Promise<Loaded> {
  let entry = loaded.get(spec);
  if (!entry) {
    const source = spec.source;
    entry = ('path' in source ? readFile(source.path) : Promise.resolve(Buffer.from(source.build()))).then((body) => ({
      body,
      gzip: gzipSync(body),
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
    }));
    // A missing file (e.g. lightweight-charts not installed yet) is retried on the next request.
    entry.catch(() => loaded.delete(spec));
    loaded.set(spec, entry);
  }
  return entry;
}

async function respond(spec: AssetSpec, req: { header(name: string): string | undefined }, extra: Record<string, string> = {}) {
  let file: Loaded;
  try {
    file = await load(spec);
  } catch {
    return null;
  }
  const headers: Record<string, string> = {
    'Content-Type': spec.type,
    'Cache-Control': spec.cache,
    ETag: file.etag,
    Vary: 'Accept-Encoding',
    'X-Content-Type-Options': 'nosniff',
    ...extra,
  };
  const match = req.header('if-none-match');
  if (match?.split(',').some((tag) => tag.trim().replace(/^W\//, '') === file.etag)) {
    return new Response(null, { status: 304, headers });
  }
  const accepted = acceptedEncodings(req.header('accept-encoding'));
  const gzip = accepted.has('gzip') || accepted.has('*');
  if (gzip) headers['Content-Encoding'] = 'gzip';
  const body = gzip ? file.gzip : file.body;
  headers['Content-Length'] = String(body.length);
  return new Response(new Uint8Array(body), { status: 200, headers });
}

/** Mounts `GET /` (the page) and `GET /assets/<name>` (its files). HEAD is answered by Hono from GET. */
export function registerDashboard<E extends Env>(app: Hono<E>): Hono<E> {
  app.get('/', async (c) => (await respond(INDEX, c.req, PAGE_HEADERS)) ?? c.notFound());
  app.get('/assets/:name', async (c) => {
    const name = c.req.param('name');
    const spec = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    return (spec && (await respond(spec, c.req))) || c.notFound();
  });
  return app;
}
