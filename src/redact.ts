/**
 * The one redaction of API keys in text that leaves the process. Every log line and every error body
 * that echoes a request passes through redactKeys: anything shaped like a key this service issues
 * (`<prefix>live_` + 43 URL-safe characters, any prefix) is masked.
 */
const KEY_SHAPED = /[a-z0-9]{1,16}_live_[A-Za-z0-9_-]{43}/g;
const CLOB_KEY_SEGMENT = /\/+v1\/+clob\/+[^/?#]*/gi;

export function redactKeys(text: string): string {
  return text.replace(KEY_SHAPED, '<key>');
}

/**
 * A request path fit for logs and bodies: keys masked, and so is the key segment of a
 * Polymarket-compatible path (`/v1/clob/<key>/…`, however the client spelled it: `//v1/clob/…`,
 * `/V1/CLOB/…`, `/v1//clob/…`), which may hold a mistyped key of any shape.
 */
export function redactPath(path: string): string {
  return redactKeys(path).replace(CLOB_KEY_SEGMENT, '/v1/clob/<key>');
}
