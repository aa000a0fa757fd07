import { randomBytes } from 'node:crypto';
import type { Piece } from './raw-http.js';
import type { Rng } from './rng.js';

/**
 * Raw HTTP/1.x framing, written byte by byte on a `node:net` socket: request-targets no client sends
 * (`//`, `/..`, `*`, absolute-form, percent garbage, 20 KB long), missing, duplicate and broken Host
 * headers (`Host: a b`), `Connection: Upgrade` + `Upgrade: websocket` on any target, malformed
 * chunking and Content-Length, oversized headers (> 16 KB), invalid header bytes, HTTP/1.0 and
 * unknown versions, pipelined requests, and slow partial requests held open (bounded).
 *
 * A request is a default (a well-formed request to a real route) with one dimension changed; the
 * first `framingEnumeration().length` cases change each dimension through each of its values in order,
 * later cases change two to four dimensions at once, and every 7th later case is a pipelined burst
 * or a slow partial request.
 */

export interface FramingContext {
  port: number;
  keys: { unlimited: string; free: string };
  asset: string;
  now: number;
}

export interface FramingCase {
  description: string;
  pieces: Piece[];
  /** Methods of the requests, in order (a HEAD answer has no body). */
  methods: string[];
  /** Answers that must come (a complete request gets one; a cut or held one none). */
  minResponses: number;
  /** Resolve once everything is sent and keep the connection(s) open during the checks. */
  hold: boolean;
  /** Parallel connections sending the same pieces (slowloris). */
  connections: number;
  secrets: string[];
  /** The request-target of each request (for the contract's shape by path). */
  targets: string[];
}

interface Request {
  method: string;
  target: string;
  version: string;
  host: string[];
  headers: string[];
  upgrade: string[];
  body: { headers: string[]; bytes: string; complete: boolean };
  /** Line ending (`\r\n`, or a bare `\n`). */
  eol: string;
  /** The request is not a complete HTTP request (no answer is owed). */
  incomplete?: boolean;
  label: string[];
}

type Dimension = { name: string; values: ((r: Request, c: FramingContext) => void)[] };

const set =
  <K extends keyof Request>(key: K, value: Request[K] | ((c: FramingContext) => Request[K]), label: string) =>
  (r: Request, c: FramingContext) => {
    r[key] = typeof value === 'function' ? (value as (c: FramingContext) => Request[K])(c) : value;
    r.label.push(label);
  };

function replayTarget(c: FramingContext) {
  return `/v1/replay/market?from=${c.now - 60_000}&to=${c.now}&speed=max&key=${c.keys.unlimited}`;
}

const TARGETS: [string, (c: FramingContext) => string][] = [
  ['//', () => '//'],
  ['/..', () => '/..'],
  ['/../..', () => '/../../etc/passwd'],
  ['*', () => '*'],
  ['absolute-form', () => 'http://evil.example/v1/markets?limit=1'],
  ['absolute-form https', () => 'https://127.0.0.1/healthz'],
  ['authority-form', () => '127.0.0.1:443'],
  ['%', () => '/%'],
  ['%zz', () => '/v1/markets?search=%zz'],
  ['%00', () => '/v1/%00'],
  ['%2e%2e', () => '/v1/%2e%2e/healthz'],
  ['overlong UTF-8', () => '/%C0%AF'],
  ['raw UTF-8 bytes', () => '/v1/markets?search=\u00e9\u2603'],
  ['empty', () => ''],
  ['no leading slash', () => 'v1/markets'],
  ['?', () => '/?'],
  ['#frag', () => '/healthz#frag'],
  ['backslash', () => '/\\v1\\markets'],
  ['long 8 KB', () => `/v1/markets?search=${'a'.repeat(8_000)}`],
  ['long 20 KB', () => `/${'a'.repeat(20_000)}`],
  ['//v1/clob/<key>', (c) => `//v1/clob/${c.keys.unlimited}/at/latest/book?token_id=${c.asset}`],
  ['/V1/clob/<key>', (c) => `/V1/clob/${c.keys.unlimited}/at/latest/book?token_id=${c.asset}`],
  ['/v1/clob/<key>/x', (c) => `/v1/clob/${c.keys.unlimited}/at/latest/nope`],
  ['/v1/clob//at', (c) => `/v1/clob//at/latest/book?token_id=${c.asset}`],
  ['/v1/clob/./at', (c) => `/v1/clob/./at/latest/book?token_id=${c.asset}`],
  ['/v1/clob/<key>/at/./book', (c) => `/v1/clob/${c.keys.unlimited}/at/./book?token_id=${c.asset}`],
  ['/v1//markets', () => '/v1//markets'],
  ['/v1/replay/market?key=<key>', (c) => replayTarget(c)],
  ['//v1/replay/market?key=<key>', (c) => `/${replayTarget(c)}`],
  ['/v1/ticks/export (end=max)', (c) => `/v1/ticks/export?asset_id=${c.asset}&start=${c.now - 60_000}&end=8640000000000000`],
];

const HOSTS: [string, (c: FramingContext) => string[]][] = [
  ['no Host', () => []],
  ['Host: a b', () => ['Host: a b']],
  ['Host empty', () => ['Host:']],
  ['Host twice (same)', (c) => [`Host: 127.0.0.1:${c.port}`, `Host: 127.0.0.1:${c.port}`]],
  ['Host twice (different)', (c) => [`Host: 127.0.0.1:${c.port}`, 'Host: evil.example']],
  ['Host [::1', () => ['Host: [::1']],
  ['Host a:99999', () => ['Host: a:99999']],
  ['Host a/b', () => ['Host: a/b']],
  ['Host a?b', () => ['Host: a?b']],
  ['Host a#b', () => ['Host: a#b']],
  ['Host @', () => ['Host: user@evil']],
  ['Host %zz', () => ['Host: %zz']],
  ['Host with tab', () => ['Host: a\tb']],
  ['Host unicode', () => ['Host: ünïcödé.example']],
  ['Host 10 KB', () => [`Host: ${'a'.repeat(10_000)}`]],
  ['host lower-case', (c) => [`host: 127.0.0.1:${c.port}`]],
  ['Host without space', (c) => [`Host:127.0.0.1:${c.port}`]],
];

const HEADERS: [string, (c: FramingContext) => string[]][] = [
  ['one header of 17 KB', () => [`X-Big: ${'a'.repeat(17 * 1024)}`]],
  ['one header of 15 KB', () => [`X-Big: ${'a'.repeat(15 * 1024)}`]],
  ['2000 headers', () => Array.from({ length: 2000 }, (_, i) => `X-H${i}: ${i}`)],
  ['cookie of 30 KB', () => [`Cookie: ${'c=1; '.repeat(6_000)}`]],
  ['NUL in a value', () => ['X-Nul: a\u0000b']],
  ['DEL in a value', () => ['X-Del: a\u007fb']],
  ['CR alone in a value', () => ['X-Cr: a\rb']],
  ['no colon', () => ['NoColonHere']],
  ['space in the name', () => ['X Y: 1']],
  ['empty name', () => [': x']],
  ['obs-fold', () => ['X-Fold: a', ' folded']],
  ['UTF-8 bytes in a value', () => ['X-Utf8: é☃😀']],
  ['Latin-1 bytes in a value', () => ['X-Latin1: \u00ff\u00fe']],
  ['Authorization twice', (c) => [`Authorization: Bearer ${c.keys.unlimited}`, 'Authorization: Bearer nope']],
  ['Authorization 12 KB', () => [`Authorization: Bearer ${'A'.repeat(12_000)}`]],
  ['Authorization unknown key', () => [`Authorization: Bearer th_live_${randomBytes(32).toString('base64url')}`]],
  ['X-Request-Id garbage', () => ['X-Request-Id: ../../\u00ff']],
  ['Expect: 100-continue', () => ['Expect: 100-continue']],
  ['Expect: garbage', () => ['Expect: 999-nope']],
  ['Accept-Encoding 4 KB', () => [`Accept-Encoding: ${'gzip;q=0.1, '.repeat(300)}`]],
  ['X-Forwarded-For garbage', () => ['X-Forwarded-For: ::::, 999.1.1.1, \u00ff']],
  ['Transfer-Encoding: identity', () => ['Transfer-Encoding: identity']],
];

const UPGRADES: [string, string[]][] = [
  ['Connection: Upgrade + Upgrade: websocket', ['Connection: Upgrade', 'Upgrade: websocket']],
  [
    'full WebSocket handshake',
    ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${Buffer.alloc(16, 7).toString('base64')}`],
  ],
  [
    'WebSocket handshake, version 8',
    ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 8', `Sec-WebSocket-Key: ${Buffer.alloc(16, 7).toString('base64')}`],
  ],
  ['WebSocket handshake, bad key', ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: nope']],
  ['Connection: keep-alive, Upgrade', ['Connection: keep-alive, Upgrade', 'Upgrade: websocket']],
  ['Upgrade: h2c', ['Connection: Upgrade, HTTP2-Settings', 'Upgrade: h2c', 'HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA']],
  ['Upgrade: foo', ['Connection: upgrade', 'Upgrade: foo']],
  ['Upgrade without Connection', ['Upgrade: websocket']],
];

const VERSIONS: [string, string][] = [
  ['HTTP/1.0', 'HTTP/1.0'],
  ['HTTP/0.9 (no version)', ''],
  ['HTTP/2.0', 'HTTP/2.0'],
  ['HTTP/1.2', 'HTTP/1.2'],
  ['HTTP/9.9', 'HTTP/9.9'],
  ['http/1.1', 'http/1.1'],
  ['HTTP/1.1 + trailing space', 'HTTP/1.1 '],
  ['HTTP/1', 'HTTP/1'],
];

const METHODS = ['HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'CONNECT', 'PRI', 'FOO', 'get', 'M'.repeat(100), 'G\u00e9T'];

type Body = Request['body'];
const BODIES: [string, (c: FramingContext) => Body][] = [
  ['Content-Length JSON', () => ({ headers: ['Content-Type: application/json', 'Content-Length: 2'], bytes: '{}', complete: true })],
  ['Content-Length -1', () => ({ headers: ['Content-Length: -1'], bytes: '', complete: true })],
  ['Content-Length abc', () => ({ headers: ['Content-Length: abc'], bytes: '', complete: true })],
  ['Content-Length twice, different', () => ({ headers: ['Content-Length: 2', 'Content-Length: 3'], bytes: '{}', complete: true })],
  ['Content-Length 1e20, short body', () => ({ headers: ['Content-Length: 100000000000000000000'], bytes: '{}', complete: false })],
  ['Content-Length 2^53', () => ({ headers: ['Content-Length: 9007199254740993'], bytes: '{}', complete: false })],
  [
    'Content-Length shorter than the body',
    () => ({ headers: ['Content-Type: application/json', 'Content-Length: 2'], bytes: '{}GARBAGE / HTTP/1.1\r\n\r\n', complete: true }),
  ],
  ['chunked, valid', () => ({ headers: ['Content-Type: application/json', 'Transfer-Encoding: chunked'], bytes: '2\r\n{}\r\n0\r\n\r\n', complete: true })],
  ['chunked, size zz', () => ({ headers: ['Transfer-Encoding: chunked'], bytes: 'zz\r\n{}\r\n0\r\n\r\n', complete: true })],
  ['chunked, size overflow', () => ({ headers: ['Transfer-Encoding: chunked'], bytes: 'fffffffffffffffffff\r\n{}\r\n0\r\n\r\n', complete: true })],
  ['chunked, size -1', () => ({ headers: ['Transfer-Encoding: chunked'], bytes: '-1\r\n{}\r\n0\r\n\r\n', complete: true })],
  ['chunked, no CRLF after data', () => ({ headers: ['Transfer-Encoding: chunked'], bytes: '2\r\n{}XX0\r\n\r\n', complete: true })],
  ['chunked, no last chunk', () => ({ headers: ['Transfer-Encoding: chunked'], bytes: '2\r\n{}\r\n', complete: false })],
  ['chunked, 4 KB extension', () => ({ headers: ['Transfer-Encoding: chunked'], bytes: `2;${'e'.repeat(4096)}\r\n{}\r\n0\r\n\r\n`, complete: true })],
  [
    'chunked, 20 KB in 1 KB chunks',
    () => ({
      headers: ['Content-Type: application/json', 'Transfer-Encoding: chunked'],
      bytes: `${`400\r\n${' '.repeat(1024)}\r\n`.repeat(20)}0\r\n\r\n`,
      complete: true,
    }),
  ],
  ['chunked + Content-Length', () => ({ headers: ['Transfer-Encoding: chunked', 'Content-Length: 3'], bytes: '0\r\n\r\n', complete: true })],
  ['Transfer-Encoding: chunked, gzip', () => ({ headers: ['Transfer-Encoding: chunked, gzip'], bytes: '0\r\n\r\n', complete: true })],
  ['Transfer-Encoding: xchunked', () => ({ headers: ['Transfer-Encoding: xchunked'], bytes: '0\r\n\r\n', complete: true })],
  ['Transfer-Encoding twice', () => ({ headers: ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'], bytes: '0\r\n\r\n', complete: true })],
  ['chunked with trailers', () => ({ headers: ['Transfer-Encoding: chunked'], bytes: '2\r\n{}\r\n0\r\nX-Trailer: 1\r\n\r\n', complete: true })],
];

/** The dimensions, each with its values; the default request changes one of them per case. */
const DIMENSIONS: Dimension[] = [
  { name: 'target', values: TARGETS.map(([label, f]) => set('target', f, `target ${label}`)) },
  { name: 'host', values: HOSTS.map(([label, f]) => set('host', f, label)) },
  {
    name: 'header',
    values: HEADERS.map(([label, f]) => (r: Request, c: FramingContext) => {
      r.headers.push(...f(c));
      r.label.push(label);
    }),
  },
  { name: 'upgrade', values: UPGRADES.map(([label, h]) => set('upgrade', h, label)) },
  { name: 'version', values: VERSIONS.map(([label, v]) => set('version', v, label)) },
  { name: 'method', values: METHODS.map((m) => set('method', m, `method ${m.slice(0, 12)}`)) },
  {
    name: 'body',
    values: BODIES.map(([label, f]) => (r: Request, c: FramingContext) => {
      r.body = f(c);
      r.label.push(label);
      if (r.method === 'GET') r.method = 'POST';
      if (!r.body.complete) r.incomplete = true;
    }),
  },
  { name: 'eol', values: [set('eol', '\n', 'bare LF line ends')] },
  // Issue 24, item 1: an upgrade with an unparsable target or Host killed the process. Every target and
  // every Host once more, with `Connection: Upgrade` + `Upgrade: websocket`.
  {
    name: 'upgrade+target',
    values: TARGETS.map(([label, f]) => (r: Request, c: FramingContext) => {
      set('target', f, `target ${label}`)(r, c);
      set('upgrade', UPGRADES[0][1], UPGRADES[0][0])(r, c);
    }),
  },
  {
    name: 'upgrade+host',
    values: HOSTS.map(([label, f]) => (r: Request, c: FramingContext) => {
      set('host', f, label)(r, c);
      set('upgrade', UPGRADES[1][1], UPGRADES[1][0])(r, c);
    }),
  },
];

/** The well-formed requests the dimensions start from (one per case, by the case's rng). */
const BASES: [string, (c: FramingContext) => string][] = [
  ['/healthz', () => '/healthz'],
  ['/v1/markets', () => '/v1/markets?limit=2'],
  ['/v1/register', () => '/v1/register'],
  ['/v1/ticks', (c) => `/v1/ticks?asset_id=${c.asset}&start=${c.now - 3_600_000}&end=${c.now}&limit=5`],
  ['/v1/replay/market', (c) => replayTarget(c)],
  ['/v1/clob/<key>/at/latest/book', (c) => `/v1/clob/${c.keys.unlimited}/at/latest/book?token_id=${c.asset}`],
  ['/nope', () => '/nope'],
];

function baseRequest(rng: Rng, c: FramingContext): Request {
  const [label, target] = rng.pick(BASES);
  const authorized = !target(c).includes('/clob/') && !target(c).includes('key=') && rng.chance(0.7);
  return {
    method: label === '/v1/register' ? 'POST' : 'GET',
    target: target(c),
    version: 'HTTP/1.1',
    host: [`Host: 127.0.0.1:${c.port}`],
    headers: authorized ? [`Authorization: Bearer ${c.keys.unlimited}`] : [],
    upgrade: [],
    body: { headers: [], bytes: '', complete: true },
    eol: '\r\n',
    label: [`on ${label}`],
  };
}

function render(r: Request): string {
  const line = r.version ? `${r.method} ${r.target} ${r.version}` : `${r.method} ${r.target}`;
  const head = [line, ...r.host, ...r.headers, ...r.upgrade, ...r.body.headers];
  // HTTP/1.1 keeps the connection open: the checks then see whether an answer came at all.
  return `${head.join(r.eol)}${r.eol}${r.eol}${r.body.bytes}`;
}

/** The enumeration: each value of each dimension once (on a base chosen by the case's rng). */
export function framingEnumeration(): { dimension: Dimension; value: number }[] {
  return DIMENSIONS.flatMap((dimension) => dimension.values.map((_, value) => ({ dimension, value })));
}

const KEY_IN = /th_live_[A-Za-z0-9_-]{16,}/g;

export function framingCase(index: number, rng: Rng, c: FramingContext): FramingCase {
  const list = framingEnumeration();
  if (index >= list.length && index % 7 === 0) return rng.chance(0.5) ? pipelined(rng, c) : slow(rng, c);
  const r = baseRequest(rng, c);
  if (index < list.length) {
    const { dimension, value } = list[index];
    // Upgrades and Hosts also meet every bad target (issue 24: `//` with an upgrade killed the process).
    dimension.values[value](r, c);
    if (dimension.name === 'upgrade' && rng.chance(0.5)) DIMENSIONS[0].values[rng.int(0, 1)](r, c);
  } else {
    for (const d of rng.sample(DIMENSIONS, rng.int(2, 4))) rng.pick(d.values)(r, c);
  }
  return single(r);
}

function single(r: Request): FramingCase {
  const bytes = render(r);
  const method = r.method;
  return {
    description: `${r.label.join(', ')}: ${JSON.stringify(bytes.length > 300 ? `${bytes.slice(0, 300)}…` : bytes)}`,
    pieces: [Buffer.from(bytes, r.label.some((l) => l.includes('UTF-8')) ? 'utf8' : 'latin1')],
    methods: [method],
    minResponses: r.incomplete ? 0 : 1,
    hold: !!r.incomplete,
    connections: 1,
    secrets: [...new Set(bytes.match(KEY_IN) ?? [])],
    targets: [r.target],
  };
}

/** 2-20 requests in one write; one of them may be malformed (then the answers up to it must come). */
function pipelined(rng: Rng, c: FramingContext): FramingCase {
  const n = rng.int(2, 20);
  const requests: Request[] = [];
  let bad = -1;
  for (let i = 0; i < n; i++) {
    const r = baseRequest(rng, c);
    if (r.method === 'POST') r.body = { headers: ['Content-Type: application/json', 'Content-Length: 2'], bytes: '{}', complete: true };
    if (bad < 0 && rng.chance(0.15)) {
      bad = i;
      const d = rng.pick(DIMENSIONS.filter((x) => x.name !== 'eol' && x.name !== 'upgrade'));
      rng.pick(d.values)(r, c);
    }
    requests.push(r);
  }
  const bytes = requests.map(render).join('');
  return {
    description:
      `${n} pipelined requests${bad >= 0 ? `, #${bad + 1} changed (${requests[bad].label.slice(1).join(', ')})` : ''}: ` +
      `${JSON.stringify(bytes.slice(0, 300))}…`,
    pieces: [Buffer.from(bytes, 'latin1')],
    methods: requests.map((r) => r.method),
    // Answers up to the first changed request must come; after it the server may close.
    minResponses: bad >= 0 ? bad : n,
    hold: false,
    connections: 1,
    secrets: [...new Set(bytes.match(KEY_IN) ?? [])],
    targets: requests.map((r) => r.target),
  };
}

/** Slowloris, bounded: 1-64 connections each send part of a request in pieces with pauses, then stay open during the checks. */
function slow(rng: Rng, c: FramingContext): FramingCase {
  const r = baseRequest(rng, c);
  const full = render(r);
  const cut = rng.int(1, full.length - 3);
  const partial = full.slice(0, cut);
  const pieces: Piece[] = [];
  const steps = rng.int(1, 4);
  for (let i = 0; i < steps; i++) {
    pieces.push(partial.slice(Math.floor((i * partial.length) / steps), Math.floor(((i + 1) * partial.length) / steps)));
    if (i < steps - 1) pieces.push({ pauseMs: rng.int(10, 150) });
  }
  const connections = rng.pick([1, 8, 64]);
  return {
    description:
      `slow partial request on ${connections} connection(s): ${steps} piece(s),` +
      ` first ${cut} of ${full.length} bytes: ${JSON.stringify(partial.slice(0, 120))}`,
    pieces,
    methods: [r.method],
    minResponses: 0,
    hold: true,
    connections,
    secrets: [...new Set(full.match(KEY_IN) ?? [])],
    targets: [r.target],
  };
}
