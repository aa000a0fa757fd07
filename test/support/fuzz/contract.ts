import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { header, type RawResponse } from './raw-http.js';

/**
 * What every HTTP answer of the service must look like, whatever was sent (API.md §6, TIME-MACHINE.md
 * §2, issue 24): never a 5xx; an error is JSON — `{"detail":{"error","message",…}}` under /v1 with the
 * members its code carries, `{"detail":{"message"}}` for a 404, Polymarket's `{"error"}` under
 * `/v1/clob/…` — Node's own refusals of malformed HTTP (400, 431, …) included; no answer carries an
 * API key the request held (or one of the harness's keys); an export never has a row more than a
 * minute after the time of the request (no data can exist there).
 */

/** API.md §6 and BILLING.md, written from the specs: code → status, and the members `detail` must carry. */
export const ERROR_CODES: Record<string, { status: number; extra: string[] }> = {
  invalid_parameter: { status: 400, extra: ['param'] },
  // HTTP the server could not read (a target or Host that is not a URL, broken framing), a request not
  // received in time, headers over 16 KiB: the front door's own answers (issue 24).
  bad_request: { status: 400, extra: [] },
  request_timeout: { status: 408, extra: [] },
  header_too_large: { status: 431, extra: [] },
  invalid_api_key: { status: 401, extra: [] },
  invalid_signature: { status: 401, extra: [] },
  data_access_denied: { status: 403, extra: ['plan', 'earliest_allowed'] },
  payload_too_large: { status: 413, extra: [] },
  // docs/MCP.md §1: the MCP endpoint keeps no session, so GET and DELETE have nothing to serve.
  method_not_allowed: { status: 405, extra: [] },
  rate_limit_exceeded: { status: 429, extra: ['limit', 'plan'] },
  too_many_registrations: { status: 429, extra: ['limit'] },
  // Issue 35: an account's heavy requests (exports, Tardis files and slices, replays) beyond its plan's.
  too_many_concurrent_requests: { status: 429, extra: ['limit', 'plan'] },
  payment_provider_error: { status: 502, extra: [] },
  service_unavailable: { status: 503, extra: [] },
  payments_unavailable: { status: 503, extra: [] },
  // TIME-MACHINE.md §1 is silent on a plain request to the replay WebSocket; README: 426.
  upgrade_required: { status: 426, extra: [] },
};

/** A key-shaped token (`th_live_` + base64url): whatever holds one, a response must not echo it. */
export const KEY_SHAPE = /th_live_[A-Za-z0-9_-]{16,}/g;

export interface SentRequest {
  method: string;
  /** The request-target exactly as sent. */
  target: string;
  /**
   * `route`: a well-formed request to an operation of the OpenAPI document (its error codes are the
   * contract's); `raw`: anything (HTTP framing abuse): Node's own refusals may name codes of their own.
   */
  kind: 'route' | 'raw';
  /** When it was sent (ms): an export row after it is data from the future. */
  sentAt: number;
  /** Key-shaped strings the request carried, and the harness's own keys: none may come back. */
  secrets: string[];
  /** The answer is a register/regenerate success: its `api_key` is new, not an echo. */
  issuesKey?: boolean;
}

/** Where a request-target points, as far as the contract's shapes go. */
export function targetClass(target: string): 'clob' | 'clob-lookalike' | 'kalshi' | 'kalshi-lookalike' | 'v1' {
  const rawPath = target.split(/[?#]/)[0];
  let normalized = rawPath;
  try {
    normalized = new URL(rawPath, 'http://x').pathname;
  } catch {
    // Not parsable: the raw path decides.
  }
  if (rawPath.startsWith('/v1/clob/') || (rawPath.startsWith('/') && !rawPath.startsWith('//') && normalized.startsWith('/v1/clob/'))) return 'clob';
  // `//v1/clob/<key>/…`, `/V1/clob/<key>/…`, `http://h/v1/clob/…` route nowhere: either shape will do.
  if (/^(?:[a-z]+:\/\/[^/]*)?\/+v1\/clob\//i.test(rawPath)) return 'clob-lookalike';
  // Kalshi's REST twin (docs/KALSHI.md §5) answers in Kalshi's shape, the same way.
  if (rawPath.startsWith('/v1/kalshi/') || (rawPath.startsWith('/') && !rawPath.startsWith('//') && normalized.startsWith('/v1/kalshi/'))) return 'kalshi';
  if (/^(?:[a-z]+:\/\/[^/]*)?\/+v1\/kalshi\//i.test(rawPath)) return 'kalshi-lookalike';
  return 'v1';
}

export function contractViolations(sent: SentRequest, res: RawResponse): string[] {
  const out: string[] = [];
  const decoded = decode(res);
  if (decoded === null) return res.status >= 500 ? [`5xx: ${res.status}`] : [];
  const body = decoded.toString('utf8');
  if (res.status >= 500) out.push(`5xx: ${res.status}`);
  const contentType = header(res, 'content-type') ?? '';
  const everything = `${res.headers.map(([n, v]) => `${n}: ${v}`).join('\n')}\n${body}`;
  for (const secret of sent.secrets) {
    if (secret.length >= 16 && everything.includes(secret) && !(sent.issuesKey && !sent.target.includes(secret)))
      out.push(`key echoed: the answer holds ${secret.slice(0, 14)}…`);
  }
  if (res.status >= 400) {
    if (!/^application\/json/i.test(contentType)) {
      out.push(`error without a JSON body: ${res.status} Content-Type ${JSON.stringify(contentType)} body ${JSON.stringify(body.slice(0, 80))}`);
      return out;
    }
    if (sent.method === 'HEAD') return out;
    if (res.truncated) return out;
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      out.push(`error body is not JSON: ${JSON.stringify(body.slice(0, 120))}`);
      return out;
    }
    const shape = errorShape(json);
    const where = targetClass(sent.target);
    if (where === 'clob') {
      if (shape !== 'polymarket') out.push(`${res.status} under /v1/clob/ is not Polymarket's {"error"}: ${body.slice(0, 160)}`);
    } else if (where === 'kalshi') {
      if (shape !== 'kalshi') out.push(`${res.status} under /v1/kalshi/ is not Kalshi's {"error":{code,message,service}}: ${body.slice(0, 160)}`);
      else {
        const name = (json as { error: { code: string } }).error.code;
        const status = name === 'not_found' ? 404 : ERROR_CODES[name]?.status;
        if (status === undefined) out.push(`unknown error code in Kalshi's shape: ${body.slice(0, 160)}`);
        else if (status !== res.status) out.push(`code ${name} with status ${res.status} (the contract says ${status})`);
      }
    } else if (shape === 'kalshi') {
      if (where !== 'kalshi-lookalike') out.push(`${res.status} outside /v1/kalshi/ has Kalshi's shape: ${body.slice(0, 160)}`);
    } else if (shape === 'polymarket') {
      if (where !== 'clob-lookalike') out.push(`${res.status} outside /v1/clob/ has Polymarket's shape: ${body.slice(0, 160)}`);
    } else if (shape === 'not-found') {
      if (res.status !== 404) out.push(`{"detail":{"message"}} with status ${res.status}`);
    } else if (shape === 'api') {
      const detail = (json as { detail: Record<string, unknown> }).detail;
      const code = ERROR_CODES[detail.error as string];
      if (res.status === 404) out.push(`404 must be {"detail":{"message"}}: ${body.slice(0, 160)}`);
      else if (code) {
        if (code.status !== res.status) out.push(`code ${detail.error} with status ${res.status} (the contract says ${code.status})`);
        for (const member of code.extra) if (!(member in detail)) out.push(`${detail.error} without detail.${member}`);
      } else if (sent.kind === 'route') out.push(`unknown error code ${JSON.stringify(detail.error)} (${res.status})`);
      if (res.status === 401 && header(res, 'www-authenticate') !== 'Bearer') out.push('401 without WWW-Authenticate: Bearer');
    } else {
      out.push(`${res.status} body in no contract shape: ${body.slice(0, 160)}`);
    }
    return out;
  }
  if (sent.method === 'HEAD' || res.truncated) {
    if (res.status === 200) out.push(...futureRows(sent, contentType, body, res.truncated));
    return out;
  }
  if (/^application\/json/i.test(contentType)) {
    try {
      JSON.parse(body);
    } catch {
      out.push(`${res.status} JSON answer does not parse: ${body.slice(0, 120)}`);
    }
  }
  if (res.status === 200) out.push(...futureRows(sent, contentType, body, false));
  return out;
}

type Shape = 'api' | 'not-found' | 'polymarket' | 'kalshi' | 'none';

function errorShape(json: unknown): Shape {
  if (!isObject(json)) return 'none';
  const keys = Object.keys(json);
  if (keys.length === 1 && keys[0] === 'error' && typeof json.error === 'string') return 'polymarket';
  if (keys.length === 1 && keys[0] === 'error' && isObject(json.error)) {
    const e = json.error;
    const members = Object.keys(e).sort().join(',');
    return members === 'code,message,service' && typeof e.code === 'string' && typeof e.message === 'string' && e.service === 'tickhouse' ? 'kalshi' : 'none';
  }
  if (keys.length !== 1 || keys[0] !== 'detail' || !isObject(json.detail)) return 'none';
  const detail = json.detail;
  if (typeof detail.message !== 'string') return 'none';
  if (Object.keys(detail).length === 1) return 'not-found';
  return typeof detail.error === 'string' ? 'api' : 'none';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Rows of a CSV or JSONL export (ticks or books) must lie at or before the moment of the request (no
 * data exists after it), with the README's allowance: every range, grid and replay ends at most one
 * minute after now (exchange clocks may run ahead of ours). One more second for the two processes.
 */
const FUTURE_SLACK_MS = 61_000;

function futureRows(sent: SentRequest, contentType: string, body: string, truncated: boolean): string[] {
  const lines = body.split('\n');
  if (truncated || !body.endsWith('\n')) lines.pop();
  let t: number | undefined;
  let latest = -Infinity;
  if (/^text\/csv/i.test(contentType)) {
    for (const line of lines.slice(1)) {
      t = Number(line.slice(0, line.indexOf(',')));
      if (Number.isFinite(t)) latest = Math.max(latest, t);
    }
  } else if (/^application\/x-ndjson/i.test(contentType)) {
    for (const line of lines) {
      const m = /"(?:t|timestamp)":(\d+)/.exec(line);
      if (m) latest = Math.max(latest, Number(m[1]));
    }
  } else return [];
  if (latest <= sent.sentAt + FUTURE_SLACK_MS) return [];
  const iso = Number.isNaN(new Date(latest).getTime()) ? '?' : new Date(latest).toISOString();
  return [`export row in the future: ${latest} (${iso}) > request time ${sent.sentAt}`];
}

/** The body without its Content-Encoding (null: an encoding this check cannot read, or a cut body). */
function decode(res: RawResponse): Buffer | null {
  const encoding = (header(res, 'content-encoding') ?? 'identity').toLowerCase();
  if (encoding === 'identity') return res.body;
  if (res.truncated) return null;
  try {
    if (encoding === 'gzip') return gunzipSync(res.body);
    if (encoding === 'deflate') return inflateSync(res.body);
    if (encoding === 'br') return brotliDecompressSync(res.body);
  } catch {
    return Buffer.from('(a body its Content-Encoding does not decode)');
  }
  return null;
}
