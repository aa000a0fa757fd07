import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * NOWPayments IPN signatures (BILLING.md): hex HMAC-SHA512 of `JSON.stringify` of the body with the
 * keys of every object sorted, nested ones (`fee`) included. The signature covers that canonical
 * text, not the raw bytes, so a body whose keys arrive in another order still verifies.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}

export function signIpn(body: unknown, secret: string): string {
  return createHmac('sha512', secret).update(canonicalJson(body)).digest('hex');
}

/** Constant-time: the comparison does not reveal how many leading characters of a guess were right. */
export function verifyIpnSignature(body: unknown, signature: string | undefined, secret: string): boolean {
  if (!signature) return false;
  const expected = Buffer.from(signIpn(body, secret), 'hex');
  const given = Buffer.from(signature.trim().toLowerCase(), 'hex');
  // A wrong-length (or non-hex, which decodes short) signature is wrong; only equal lengths can be compared.
  return given.length === expected.length && timingSafeEqual(given, expected);
}
