import { randomBytes } from 'node:crypto';
import type { Rng } from './rng.js';

/**
 * Schema-driven requests: every parameter (path, query, header, JSON body member, and the body as a
 * whole) of every operation of the live `/v1/openapi.json`, set in turn to each value at or past a
 * bound of its schema — min, max, max+1, min-1, NaN, 1e400, -1, empty, huge, unicode, percent garbage,
 * the parameter twice, the parameter missing — while the other parameters take valid values (often at
 * their own bounds: a time at now, at the plan window's first ms, at the schema's maximum), and every
 * corner of an operation's numeric parameters (each at its lowest or highest valid value). The first
 * `enumeration(…).length` cases of a run walk that list in order; later cases set several parameters
 * at bounds at once.
 */

interface JsonSchema {
  type?: string | string[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  pattern?: string;
  enum?: unknown[];
  format?: string;
  example?: unknown;
  description?: string;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  required?: string[];
}

interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: JsonSchema;
  description?: string;
}

interface OpenApiOperation {
  operationId?: string;
  security?: Record<string, string[]>[];
  parameters?: OpenApiParameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: JsonSchema }> };
}

/** The asset id's pattern: Polymarket's token ids, and (src/http/params.ts) also Kalshi's `kalshi:<ticker>`. */
const ASSET_PATTERNS = ['^\\d{1,100}$', '^(\\d{1,100}|kalshi:[A-Za-z0-9._-]{1,100})$'];

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
}

/** A value to send: text (percent-encoded in a URL unless `raw`), or the parameter left out / sent twice. */
export type Value = { text: string; raw?: boolean; label: string } | { omit: true; label: string } | { twice: [string, string]; label: string };

export interface Param {
  name: string;
  in: 'path' | 'query' | 'header' | 'body' | 'item' | 'whole-body';
  required: boolean;
  schema: JsonSchema;
}

export interface Operation {
  method: string;
  path: string;
  id: string;
  params: Param[];
  /** How the operation authenticates, from its `security`. */
  auth: 'none' | 'bearer' | 'bearer-or-query' | 'path-key';
  /** The JSON body: an object of members, or an array of objects (POST …/books). */
  body: null | { kind: 'object' | 'array'; required: boolean; maxItems?: number };
}

/** What valid values are drawn from: the dataset, the keys, the clock. */
export interface Domain {
  now: number;
  assets: string[];
  first: number;
  last: number;
  keys: { unlimited: string; free: string };
}

export function operationsOf(doc: OpenApiDocument): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'delete', 'patch'].includes(method)) continue;
      const params: Param[] = (op.parameters ?? [])
        .filter((p) => p.in !== 'cookie')
        .map((p) => ({
          name: p.name,
          in: p.in as Param['in'],
          required: !!p.required || p.in === 'path',
          schema: { description: p.description, ...p.schema },
        }));
      const schemes = (op.security ?? []).flatMap((s) => Object.keys(s));
      const auth: Operation['auth'] = params.some((p) => p.in === 'path' && p.name === 'key')
        ? 'path-key'
        : schemes.includes('keyQuery')
          ? 'bearer-or-query'
          : schemes.includes('bearer')
            ? 'bearer'
            : 'none';
      let body: Operation['body'] = null;
      const schema = op.requestBody?.content?.['application/json']?.schema;
      if (schema) {
        const required = !!op.requestBody?.required;
        if (schema.type === 'array') {
          body = { kind: 'array', required, maxItems: schema.maxItems };
          for (const [name, s] of Object.entries(schema.items?.properties ?? {}))
            params.push({ name, in: 'item', required: (schema.items?.required ?? []).includes(name), schema: s });
        } else {
          body = { kind: 'object', required };
          for (const [name, s] of Object.entries(schema.properties ?? {}))
            params.push({ name, in: 'body', required: (schema.required ?? []).includes(name), schema: s });
        }
        params.push({ name: '(body)', in: 'whole-body', required, schema: { ...schema } });
      }
      ops.push({ method: method.toUpperCase(), path, id: op.operationId ?? `${method} ${path}`, params, auth, body });
    }
  }
  return ops;
}

const MAX_DATE = 8_640_000_000_000_000;
/** The last ms ClickHouse's DateTime64(3) holds (2299-12-31T23:59:59.999Z): the engine's own bound on every time. */
const ENGINE_MAX_DATE = Date.UTC(2299, 11, 31, 23, 59, 59, 999);
const DAY = 86_400_000;
const TIME_NAMES = /^(start|end|since|until|timestamp|from|to|instant|startTs|endTs)$/;

const t = (text: string | number, label?: string): Value => ({ text: String(text), label: label ?? String(text).slice(0, 40) });
const raw = (text: string, label?: string): Value => ({ text, raw: true, label: label ?? `raw ${text.slice(0, 30)}` });
const big = (n: number, unit = 'x'): Value => ({ text: unit.repeat(n), label: `${unit.slice(0, 2)}×${n}` });

/** Values every parameter gets, whatever its schema. */
const COMMON: Value[] = [
  { omit: true, label: '(missing)' },
  t('', '(empty)'),
  t(' ', '(space)'),
  t('NaN'),
  t('Infinity'),
  t('1e400'),
  t('-1'),
  t('null'),
  t('[]'),
  t('😀'),
  t('\u0000', 'NUL'),
  t('\uFEFF1', 'BOM+1'),
  raw('%', 'raw %'),
  raw('%zz', 'raw %zz'),
  raw('%E0%A4%A', 'raw truncated UTF-8'),
  raw('%C0%AF', 'raw overlong UTF-8'),
  big(10_000),
  big(20_000),
  big(3_000, '☃'),
];

/** Text of a time relative to the domain, for labels. */
function timeValues(d: Domain): Value[] {
  const midnight = Math.floor(d.now / DAY) * DAY;
  return [
    t(d.now, 'now'),
    t(d.now + 1, 'now+1'),
    t(d.now - 1_000, 'now-1s'),
    t(midnight, 'free window start'),
    t(midnight - 1, 'free window start-1'),
    t(midnight - 3650 * DAY, 'unlimited window start'),
    t(midnight - 3650 * DAY - 1, 'unlimited window start-1'),
    t(d.first, 'first tick'),
    t(d.last, 'last tick'),
    t(d.now + 365 * DAY, 'now+1y'),
    t(ENGINE_MAX_DATE, 'engine max date'),
    t(ENGINE_MAX_DATE + 1, 'engine max date+1'),
  ];
}

/** Valid values of a parameter (often at its own bounds), to fill the parameters not under test. */
export function validValues(_op: Operation, p: Param, d: Domain): Value[] {
  const s = p.schema;
  if (p.name === 'key') return [t(d.keys.unlimited, 'unlimited key'), t(d.keys.free, 'free key')];
  if (TIME_NAMES.test(p.name) || (p.in === 'path' && /^\d+$/.test(String(s.example ?? '')))) {
    const times = timeValues(d).filter((v) => !/-1$/.test(v.label) && !/unlimited window start$/.test(v.label));
    const seconds = s.type === 'number' && /Ts$/.test(p.name);
    const scaled = seconds ? times.map((v) => t(Number((v as { text: string }).text) / 1000, `${v.label} (s)`)) : times;
    const out = [...scaled, t(seconds ? MAX_DATE / 1000 : MAX_DATE, 'max date')];
    if (p.in === 'path') out.push(t('latest'));
    return out;
  }
  if (s.enum) return s.enum.map((e) => t(String(e)));
  if (ASSET_PATTERNS.includes(s.pattern ?? ''))
    return [...d.assets.slice(0, 6).map((a) => t(a, `asset ${a.slice(0, 6)}…`)), t('1', 'unknown asset'), t('9'.repeat(100), '9×100')];
  if (s.type === 'integer' || s.type === 'number') {
    const min = s.minimum ?? 0;
    const max = s.maximum ?? Math.max(min, 1000);
    return [t(min, 'min'), t(max, 'max'), t(Math.min(max, min + 1), 'min+1'), t(Math.floor((min + max) / 2), 'mid')];
  }
  if (s.format === 'email') return [t('fuzz@example.com')];
  if (p.name === 'x-nowpayments-sig') return [t('ab'.repeat(64))];
  if (s.maxLength) return [t('a'), t('a'.repeat(s.maxLength), 'a×max')];
  if (p.in === 'whole-body') return [];
  return [t('fuzz')];
}

/** Values at and past every bound of the parameter's schema, then the COMMON ones. */
export function boundValues(op: Operation, p: Param, d: Domain): Value[] {
  const s = p.schema;
  const out: Value[] = [];
  if (p.in === 'whole-body') return bodyBounds(op);
  const isTime = TIME_NAMES.test(p.name) || (p.in === 'path' && /^\d+$/.test(String(s.example ?? '')));
  if (s.type === 'integer' || s.type === 'number' || isTime) {
    const min = s.minimum ?? 0;
    const max = s.maximum;
    out.push(t(min, 'min'), t(min - 1, 'min-1'), t(min + 1, 'min+1'));
    if (max !== undefined) out.push(t(max, 'max'), t(max + 1, 'max+1'), t(String(BigInt(max) + 1n), 'max+1 (exact)'));
    out.push(
      t(MAX_DATE, 'max date'),
      t(`${MAX_DATE + 1}`, 'max date+1'),
      t(2 ** 53, '2^53'),
      t('9007199254740993', '2^53+1'),
      t('9'.repeat(400), '9×400'),
      t('1.5'),
      t('1e3'),
      t('-0'),
      t('+1'),
      t('0x10'),
      t('01', 'leading zero'),
      t('１', 'fullwidth 1'),
      t('١٢٣', 'Arabic-Indic digits'),
      t('-Infinity'),
      t('5e-324'),
      t('1.7976931348623157e308', 'DBL_MAX'),
      t(' 1', 'leading space'),
    );
    if (isTime) out.push(...timeValues(d));
    if (p.in === 'path') out.push(t('latest'), t('LATEST'), t('.'), t('..'), raw('%2e', 'raw %2e'), raw('%2F', 'raw %2F'));
  } else if (s.enum) {
    const first = String(s.enum[0]);
    out.push(
      ...s.enum.map((e) => t(String(e))),
      t(first.toUpperCase(), 'upper'),
      t(first.toLowerCase(), 'lower'),
      t(`${first} `, 'trailing space'),
      t(`${first}\u0000`, 'NUL suffix'),
    );
    out.push({ twice: [first, String(s.enum[s.enum.length - 1])], label: 'twice (first, last)' });
  } else if (p.name === 'key') {
    out.push(
      t(d.keys.unlimited, 'unlimited key'),
      t(d.keys.free, 'free key'),
      t(`th_live_${randomBytes(32).toString('base64url')}`, 'unknown key'),
      t(`${d.keys.unlimited}x`, 'key+x'),
      t(d.keys.unlimited.toUpperCase(), 'key upper'),
      t(d.keys.unlimited.slice(0, -1), 'key-1 char'),
      t('.'),
      t('..'),
      raw('%2e%2e', 'raw %2e%2e'),
      raw('%2F', 'raw %2F'),
    );
  } else {
    if (ASSET_PATTERNS.includes(s.pattern ?? '')) {
      out.push(
        t('0'),
        t('9'.repeat(100), '9×100'),
        t('9'.repeat(101), '9×101'),
        t('1.5'),
        t('1e5'),
        t('١٢٣', 'Arabic-Indic digits'),
        t('１', 'fullwidth 1'),
        t(`${d.assets[0]} `, 'asset+space'),
        t('1', 'unknown asset'),
      );
    }
    if (s.maxLength !== undefined)
      out.push(t('a'.repeat(s.maxLength), 'a×max'), t('a'.repeat(s.maxLength + 1), 'a×(max+1)'), t('😀'.repeat(s.maxLength), '😀×max'));
    if (s.minLength) out.push(t('a'.repeat(s.minLength - 1), 'min-1 chars'));
    if (s.format === 'email') out.push(t('a@b'), t('@'), t(`${'a'.repeat(300)}@example.com`, 'long email'), t('"a"@[::1]'));
  }
  // The parameter twice (valid twice, then valid and not).
  const valid = validValues(op, p, d).find((v) => 'text' in v) as { text: string } | undefined;
  if (valid && p.in === 'query') out.push({ twice: [valid.text, valid.text], label: 'twice (same)' }, { twice: [valid.text, 'x'], label: 'twice (valid, x)' });
  for (const v of COMMON) {
    // A header cannot carry NUL or a line break here (framing cases do that); a path cannot be "missing".
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a header value Node refuses to send (control or non-Latin-1 bytes)
    if (p.in === 'header' && 'text' in v && /[\u0000-\u001f\u0080-\uffff]/.test(v.text)) continue;
    if (p.in === 'path' && 'omit' in v) continue;
    out.push(v);
  }
  return out;
}

/** The body as a whole: missing, not JSON, the wrong type or Content-Type, over 16 KiB, deep, duplicate members; arrays at their length bounds. */
function bodyBounds(op: Operation): Value[] {
  const out: Value[] = [
    { omit: true, label: '(no body)' },
    t('', '(empty body)'),
    t('{', 'truncated JSON'),
    t('null'),
    t('[]'),
    t('{}'),
    t('"x"'),
    t('\uFEFF{}', 'BOM + {}'),
    t(`${'['.repeat(10_000)}${']'.repeat(10_000)}`, 'nested ×10000'),
    t(`{"a":"${'x'.repeat(17 * 1024)}"}`, '17 KiB'),
    t(`{"a":"${'x'.repeat(1024 * 1024)}"}`, '1 MiB'),
    t('{"__proto__":{"polluted":1}}', '__proto__'),
    t('\u0000', 'NUL'),
  ];
  if (op.body?.kind === 'object') out.push(t('{"plan":"daily","plan":"unlimited","email":"a@b.c","email":1}', 'duplicate members'));
  if (op.body?.kind === 'array') {
    const max = op.body.maxItems ?? 500;
    out.push(
      { text: '#items:0', label: '0 items' },
      { text: '#items:1', label: '1 item' },
      { text: `#items:${max}`, label: `${max} items (max)` },
      { text: `#items:${max + 1}`, label: `${max + 1} items (max+1)` },
      { text: `#dup:${max}`, label: `the same item ×${max}` },
      { text: '#items:20000', label: '20000 items' },
    );
  }
  return out;
}

export interface Built {
  method: string;
  target: string;
  headers: string[];
  body: string | null;
  /** Key-shaped strings the request carries. */
  secrets: string[];
  description: string;
  /** The request's upgrade to a WebSocket (the replay route). */
  upgrade: boolean;
  op: Operation;
  /** Which key of the ring authenticated it (so a 429 or a regenerated key can update the ring). */
  keyUsed: 'unlimited' | 'free' | null;
}

/**
 * The request of one case: `fixed` parameters at the given values, the others valid (optional ones
 * left out half the time), a key as the operation's security asks (mostly valid, sometimes the free
 * plan's, sometimes none or an unknown one).
 */
export function buildRequest(op: Operation, fixed: Map<string, Value>, d: Domain, rng: Rng, port: number): Built {
  const values = new Map<Param, Value>();
  for (const p of op.params) {
    const v = fixed.get(p.name);
    if (v) values.set(p, v);
    else if (p.in === 'whole-body') continue;
    else if (!p.required && rng.chance(0.5)) values.set(p, { omit: true, label: '(missing)' });
    else {
      const valid = validValues(op, p, d);
      values.set(p, valid.length ? rng.pick(valid) : { omit: true, label: '(missing)' });
    }
  }
  const labels: string[] = [];
  for (const [p, v] of values) if (fixed.has(p.name)) labels.push(`${p.name}=${v.label}`);
  const others: string[] = [];
  for (const [p, v] of values) if (!fixed.has(p.name) && !('omit' in v)) others.push(`${p.name}=${v.label}`);

  // Path.
  let path = op.path;
  for (const p of op.params.filter((q) => q.in === 'path')) {
    const v = values.get(p)!;
    const text = 'text' in v ? (v.raw ? v.text : encodeURIComponent(v.text)) : 'twice' in v ? encodeURIComponent(v.twice[0]) : '';
    path = path.replace(`{${p.name}}`, text);
  }
  // Query.
  const query: string[] = [];
  const enc = (v: string) => encodeURIComponent(v);
  for (const p of op.params.filter((q) => q.in === 'query')) {
    const v = values.get(p)!;
    if ('omit' in v) continue;
    if ('twice' in v) query.push(`${enc(p.name)}=${enc(v.twice[0])}`, `${enc(p.name)}=${enc(v.twice[1])}`);
    else query.push(`${enc(p.name)}=${v.raw ? v.text : enc(v.text)}`);
  }
  // Authentication.
  const headers: string[] = [];
  const secrets: string[] = [];
  let keyUsed: Built['keyUsed'] = null;
  const queryKey = op.params.find((p) => p.in === 'query' && p.name === 'key');
  const queryKeyValue = queryKey ? values.get(queryKey)! : null;
  if (queryKeyValue && 'text' in queryKeyValue) {
    secrets.push(queryKeyValue.text);
    keyUsed = queryKeyValue.text === d.keys.unlimited ? 'unlimited' : queryKeyValue.text === d.keys.free ? 'free' : null;
  }
  if (op.auth === 'bearer' || (op.auth === 'bearer-or-query' && (!queryKeyValue || 'omit' in queryKeyValue || rng.chance(0.2)))) {
    const roll = rng.next();
    // Regenerating a key replaces it: only free keys are handed to that route.
    const plan = /regenerate/.test(op.path) || roll < 0.3 ? 'free' : 'unlimited';
    const key = roll < 0.9 ? d.keys[plan] : roll < 0.95 ? `th_live_${randomBytes(32).toString('base64url')}` : null;
    if (key) {
      keyUsed = roll < 0.9 ? plan : null;
      secrets.push(key);
      headers.push(`Authorization: Bearer ${key}`);
      others.push(`auth=${keyUsed ?? 'unknown key'}`);
    } else others.push('auth=none');
  }
  if (op.auth === 'path-key') {
    const v = values.get(op.params.find((p) => p.name === 'key')!)!;
    if ('text' in v) {
      secrets.push(v.text);
      keyUsed = v.text === d.keys.unlimited ? 'unlimited' : v.text === d.keys.free ? 'free' : null;
    }
  }
  for (const p of op.params.filter((q) => q.in === 'header')) {
    const v = values.get(p)!;
    if ('text' in v) headers.push(`${p.name}: ${v.text}`);
    if ('twice' in v) headers.push(`${p.name}: ${v.twice[0]}`, `${p.name}: ${v.twice[1]}`);
  }
  // Body.
  let body: string | null = null;
  if (op.body) {
    const whole = values.get(op.params.find((p) => p.in === 'whole-body')!);
    if (whole && 'omit' in whole) body = null;
    else if (whole && 'text' in whole && !whole.text.startsWith('#')) body = whole.text;
    else {
      const member = (params: Param[]) => {
        const obj: Record<string, unknown> = {};
        for (const p of params) {
          const v = values.get(p)!;
          if ('text' in v) obj[p.name] = jsonValue(p, v.text);
          if ('twice' in v) obj[p.name] = [v.twice[0], v.twice[1]];
        }
        return obj;
      };
      if (op.body.kind === 'object') body = JSON.stringify(member(op.params.filter((p) => p.in === 'body')));
      else {
        const items = op.params.filter((p) => p.in === 'item');
        const spec = whole && 'text' in whole ? whole.text : `#items:${rng.int(1, 5)}`;
        const [, kind, n] = /^#(items|dup):(\d+)$/.exec(spec)!;
        const list: unknown[] = [];
        for (let i = 0; i < Number(n); i++) {
          const item = member(items);
          // Items not under test draw their own valid token.
          if (kind === 'items' && !fixed.has('token_id') && 'token_id' in item) item.token_id = rng.pick(d.assets);
          list.push(item);
        }
        body = JSON.stringify(list);
      }
    }
    if (body !== null)
      headers.push(
        rng.chance(0.9)
          ? 'Content-Type: application/json'
          : rng.pick(['Content-Type: text/plain', 'Content-Type: application/x-www-form-urlencoded', 'Content-Type: application/json; charset=utf-16']),
      );
  }
  const upgrade = op.auth === 'bearer-or-query' && rng.chance(0.5);
  if (upgrade)
    headers.push('Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`);
  else headers.push('Connection: close');
  headers.unshift(`Host: 127.0.0.1:${port}`);
  const target = query.length ? `${path}?${query.join('&')}` : path;
  const description = `${op.method} ${op.path} ${labels.join(' ') || '(all valid)'} | ${others.join(' ')}${upgrade ? ' (as a WebSocket upgrade)' : ''}`;
  return { method: op.method, target, headers, body, secrets, description, upgrade, op, keyUsed };
}

/** A member's value in a JSON body: numbers as numbers where the text is one (1e400 stays text: JSON has no such number). */
function jsonValue(p: Param, text: string): unknown {
  const type = p.schema.type;
  const numeric = type === 'integer' || type === 'number' || (Array.isArray(type) && (type.includes('integer') || type.includes('number')));
  if (numeric && /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(text) && Number.isFinite(Number(text))) return Number(text);
  return text;
}

/**
 * The bound values `npm test` uses (the brief of issue 24: min, max, max+1, NaN, 1e400, -1, empty, huge,
 * unicode, duplicates; plus missing, min-1, the time bounds and the key's look-alikes); `npm run fuzz`
 * uses every value.
 */
const CORE = new Set([
  '(missing)',
  '(empty)',
  'NaN',
  '1e400',
  '-1',
  '😀',
  'x×20000',
  'raw %zz',
  'min',
  'min-1',
  'max',
  'max+1',
  'max date',
  'max date+1',
  '9×400',
  'Arabic-Indic digits',
  'twice (same)',
  'twice (valid, x)',
  'twice (first, last)',
  'now',
  'now+1',
  'free window start-1',
  'upper',
  'lower',
  '9×100',
  '9×101',
  'a×max',
  'a×(max+1)',
  'unknown key',
  '.',
  '..',
  'key+x',
  'latest',
  'long email',
  'engine max date',
]);

export type Size = 'core' | 'full';

function boundsOf(op: Operation, p: Param, d: Domain, size: Size): Value[] {
  const all = boundValues(op, p, d);
  if (size === 'full' || p.in === 'whole-body') return all;
  const members = new Set((p.schema.enum ?? []).map(String));
  return all.filter((v) => CORE.has(v.label) || ('text' in v && members.has(v.text)));
}

/**
 * The lowest and the highest valid values of a numeric parameter; for a time: the free plan's first ms,
 * the engine's last (DateTime64, 2299-12-31) and the schema's maximum.
 */
function extremes(p: Param, d: Domain): Value[] | null {
  const s = p.schema;
  const isTime = TIME_NAMES.test(p.name) || (p.in === 'path' && /^\d+$/.test(String(s.example ?? '')));
  const numeric = s.type === 'integer' || s.type === 'number';
  if (!isTime && !numeric) return null;
  if (isTime) {
    const seconds = s.type === 'number';
    const midnight = Math.floor(d.now / DAY) * DAY;
    return [
      t(seconds ? midnight / 1000 : midnight, 'lowest (free window start)'),
      t(seconds ? ENGINE_MAX_DATE / 1000 : ENGINE_MAX_DATE, 'engine max date'),
      t(seconds ? MAX_DATE / 1000 : MAX_DATE, 'highest (max date)'),
    ];
  }
  const min = s.minimum ?? 0;
  const max = s.maximum ?? (s.type === 'integer' ? Number.MAX_SAFE_INTEGER : Number.MAX_VALUE);
  return [t(min, 'lowest'), t(max, 'highest')];
}

/** Every combination of the extreme valid values of an operation's numeric parameters (the first five). */
function corners(op: Operation, d: Domain): Map<string, Value>[] {
  const numeric = op.params
    .map((p) => [p, extremes(p, d)!] as const)
    .filter(([, e]) => e !== null)
    .slice(0, 5);
  if (!numeric.length) return [];
  let out: Map<string, Value>[] = [new Map()];
  for (const [p, values] of numeric) out = out.flatMap((m) => values.map((v) => new Map([...m, [p.name, v]])));
  return out;
}

type Entry = { op: Operation; fixed: Map<string, Value> };

/**
 * The schema enumeration, in document order: each operation with valid parameters; every corner of
 * its numeric parameters (all lowest/highest combinations: `start` at the free window's first ms or at
 * the maximum date with `end` and `interval` at theirs); then every (parameter, bound value) pair.
 */
export function enumeration(ops: Operation[], d: Domain, size: Size): Entry[] {
  const out: Entry[] = [];
  for (const op of ops) {
    out.push({ op, fixed: new Map() });
    for (const corner of corners(op, d)) out.push({ op, fixed: corner });
    for (const param of op.params) for (const value of boundsOf(op, param, d, size)) out.push({ op, fixed: new Map([[param.name, value]]) });
  }
  return out;
}

/** The enumeration is rebuilt every 5 s (its times are relative to now), not for every case. */
let cache: { ops: Operation[]; size: Size; builtAt: number; keys: string; list: Entry[] } | null = null;

function cachedEnumeration(ops: Operation[], d: Domain, size: Size): Entry[] {
  const keys = `${d.keys.unlimited} ${d.keys.free}`;
  if (!cache || cache.ops !== ops || cache.size !== size || cache.keys !== keys || d.now - cache.builtAt > 5_000)
    cache = { ops, size, builtAt: d.now, keys, list: enumeration(ops, d, size) };
  return cache.list;
}

/** Case `index` of the schema category: the enumeration in order, then random operations with 1-3 parameters at bounds. */
export function schemaCase(ops: Operation[], d: Domain, index: number, rng: Rng, port: number, size: Size): Built {
  const list = cachedEnumeration(ops, d, size);
  if (index < list.length) return buildRequest(list[index].op, list[index].fixed, d, rng, port);
  const op = rng.pick(ops);
  const fixed = new Map<string, Value>();
  for (const p of rng.sample(op.params, rng.int(1, Math.min(3, op.params.length))))
    fixed.set(p.name, rng.pick(rng.chance(0.7) ? boundValues(op, p, d) : [...validValues(op, p, d), ...boundValues(op, p, d)]));
  return buildRequest(op, fixed, d, rng, port);
}

/** The request's bytes. */
export function requestBytes(b: Built): Buffer {
  const body = b.body === null ? null : Buffer.from(b.body);
  const lines = [`${b.method} ${b.target} HTTP/1.1`, ...b.headers];
  if (body) lines.push(`Content-Length: ${body.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'), body ?? Buffer.alloc(0)]);
}
