import { createHash, randomBytes } from 'node:crypto';

/**
 * API keys (docs/API.md §3): `<API_KEY_PREFIX>live_` + 43 URL-safe base64 characters (32 random bytes).
 * The key is shown once; only its SHA-256 hash is stored, so a leaked store leaks no usable key.
 */
const RANDOM_CHARS = 43;

export function generateApiKey(prefix: string): string {
  return `${prefix}live_${randomBytes(32).toString('base64url')}`;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** True when `key` has the shape of a key this service issues (checked before any store lookup). */
export function looksLikeApiKey(key: string, prefix: string): boolean {
  return key.length === prefix.length + 5 + RANDOM_CHARS && key.startsWith(`${prefix}live_`) && /^[A-Za-z0-9_-]+$/.test(key.slice(prefix.length + 5));
}
