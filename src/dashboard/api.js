/**
 * The dashboard's only way to the service: the public HTTP API with `Authorization: Bearer <key>`,
 * exactly as any customer calls it (docs/API.md). Also turns API errors into readable messages.
 */
import { h } from './dom.js';
import { fmtDuration, fmtTime, nextUtcMidnight } from './format.js';

const KEY_STORAGE = 'tickhouse.api_key';

/** The key lives in this browser's localStorage only; "Sign out" removes it. */
export const session = {
  get key() {
    return localStorage.getItem(KEY_STORAGE);
  },
  signIn(key) {
    localStorage.setItem(KEY_STORAGE, key.trim());
    events.dispatchEvent(new Event('session'));
  },
  signOut() {
    localStorage.removeItem(KEY_STORAGE);
    events.dispatchEvent(new Event('session'));
  },
};

/**
 * `session`: the key changed. `usage`: a counted response reported the daily counter through its
 * X-RateLimit-* headers (docs/API.md §2), detail `{ used, limit, reset }`.
 */
export const events = new EventTarget();

export class ApiFailure extends Error {
  constructor(status, detail, headers) {
    super(detail?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = detail?.error ?? null;
    this.detail = detail ?? {};
    this.headers = headers;
  }
}

export function url(path, query = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

/**
 * Sends a request and returns the raw Response when it succeeded; throws ApiFailure otherwise.
 * `key` defaults to the signed-in key; sign-in passes a candidate to check it before keeping it.
 */
export async function send(path, { method = 'GET', query, body, signal, key = session.key } = {}) {
  const headers = { Accept: 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(url(path, query), { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiFailure(0, { error: 'network', message: 'The server could not be reached. Check your connection and retry.' }, new Headers());
  }
  reportUsage(res.headers);
  if (!res.ok) {
    const payload = await res.json().catch(() => null);
    throw new ApiFailure(res.status, payload?.detail ?? { message: `The server answered HTTP ${res.status}.` }, res.headers);
  }
  return res;
}

/** JSON endpoints: resolves to `{ data, meta }` of the success envelope. */
export async function api(path, options) {
  const res = await send(path, options);
  const payload = await res.json();
  return { data: payload.data, meta: payload.meta };
}

function reportUsage(headers) {
  const limit = headers.get('X-RateLimit-Limit');
  const remaining = headers.get('X-RateLimit-Remaining');
  if (limit === null || remaining === null) return;
  const reset = Number(headers.get('X-RateLimit-Reset')) * 1000 || nextUtcMidnight();
  events.dispatchEvent(new CustomEvent('usage', { detail: { used: Number(limit) - Number(remaining), limit: Number(limit), reset } }));
}

/** When the daily counter resets: from Retry-After / X-RateLimit-Reset, else the next UTC midnight. */
function resetTime(err) {
  const retryAfter = Number(err.headers.get('Retry-After'));
  if (retryAfter > 0) return Date.now() + retryAfter * 1000;
  const reset = Number(err.headers.get('X-RateLimit-Reset'));
  return reset > 0 ? reset * 1000 : nextUtcMidnight();
}

/**
 * The readable form of a failure: `{ title, text, action }` where action is a link
 * (`href`) or a button (`run`) that gets the user past the problem.
 */
export function explain(err) {
  if (!(err instanceof ApiFailure)) return { title: 'Something went wrong', text: String(err?.message ?? err) };
  const upgrade = { label: 'See plans and upgrade', href: '#/account/plans' };
  switch (err.code) {
    case 'invalid_api_key':
      // Signing in with a key for the first time: the form is right there, nothing to do "again".
      if (!session.key) {
        return {
          title: 'Key not accepted',
          text: 'The API key was not accepted: check that it was copied whole (it starts with th_live_), or create a new key.',
        };
      }
      return {
        title: 'Your key is no longer accepted',
        text: 'The API key was not accepted: it may have been regenerated in another window.',
        action: {
          label: 'Sign in again',
          run: () => {
            session.signOut();
            location.hash = '#/account';
          },
        },
      };
    case 'data_access_denied': {
      const since = err.detail.earliest_allowed ? Date.parse(err.detail.earliest_allowed) : NaN;
      const window = Number.isFinite(since) ? ` Your data starts at ${fmtTime(since)} UTC.` : '';
      return { title: 'Outside your plan’s history window', text: `${err.message}${window}`, action: upgrade };
    }
    case 'rate_limit_exceeded': {
      const at = resetTime(err);
      return {
        title: 'Daily limit reached',
        text: `${err.message} The counter resets at ${fmtTime(at)} UTC (in ${fmtDuration(at - Date.now())}).`,
        action: upgrade,
      };
    }
    case 'too_many_registrations':
      return { title: 'Too many new keys', text: `${err.message} Try again within the hour, or sign in with a key you already have.` };
    case 'invalid_parameter':
      return { title: 'Invalid request', text: err.detail.param ? `${err.message} (parameter “${err.detail.param}”)` : err.message };
    case 'service_unavailable':
      return { title: 'Service temporarily unavailable', text: `${err.message}` };
    case 'internal_error':
      return { title: 'Server error', text: `${err.message}${err.detail.request_id ? ` Request id: ${err.detail.request_id}.` : ''}` };
    default:
      if (err.status === 404) return { title: 'Not found', text: err.message };
      return { title: err.status ? `Error ${err.status}` : 'Connection problem', text: err.message };
  }
}

/** An alert box for a failure, placed where the failed content would have been. */
export function errorBox(err) {
  const { title, text, action } = explain(err);
  let button = null;
  if (action?.href) button = h('a', { class: 'button', href: action.href }, action.label);
  else if (action?.run) button = h('button', { type: 'button', onclick: action.run }, action.label);
  return h(
    'div',
    { class: 'alert', role: 'alert', 'data-testid': 'api-error', 'data-status': err?.status ?? '' },
    h('strong', {}, title),
    h('p', {}, text),
    button,
  );
}
