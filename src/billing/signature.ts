import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * NOWPayments IPN signatures (docs/BILLING.md): hex HMAC-SHA512 of `JSON.stringify` of the body with the
 * keys of every object sorted, nested ones (`fee`) included. The signature covers that canonical
 * text, not the raw bytes, so a body whose keys arrive in another order still verifies.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value, 0));
}

/**
 * A real IPN nests two levels (`fee`); a 6 KB body of 3,000 nested arrays would overflow the stack
 * of the recursive sort (a 500). Bodies with more levels of objects and arrays than this (the body
 * itself is the first) are not the provider's.
 */
export const MAX_IPN_DEPTH = 32;

class TooDeep extends Error {}

function sortKeys(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_IPN_DEPTH) throw new TooDeep(`nested deeper than ${MAX_IPN_DEPTH} levels`);
  if (Array.isArray(value)) return value.map((item) => sortKeys(item, depth + 1));
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key], depth + 1);
  return sorted;
}

export function signIpn(body: unknown, secret: string): string {
  return createHmac('sha512', secret).update(canonicalJson(body)).digest('hex');
}

/** Constant-time: the comparison does not reveal how many leading characters of a guess were right. */
export function verifyIpnSignature(body: unknown, signature: string | undefined, secret: string): boolean {
  if (!signature) return false;
  let expected: Buffer;
  try {
    expected = Buffer.from(signIpn(body, secret), 'hex');
  } catch (err) {
    // Too deep to be a provider's body: it cannot carry a valid signature (401, nothing changes).
    if (err instanceof TooDeep) return false;
    throw err;
  }
  const given = Buffer.from(signature.trim().toLowerCase(), 'hex');
  // A wrong-length (or non-hex, which decodes short) signature is wrong; only equal lengths can be compared.
  return given.length === expected.length && timingSafeEqual(given, expected);
}
