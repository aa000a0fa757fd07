import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { canonicalJson, MAX_IPN_DEPTH, signIpn, verifyIpnSignature } from '../src/billing/signature.js';
import { fixturePath } from './support/fixtures.js';

const vectors = JSON.parse(readFileSync(fixturePath('nowpayments/hmac-vectors.json'), 'utf8')) as {
  name: string;
  secret: string;
  canonical_string: string;
  x_nowpayments_sig: string;
  raw_body_equals_canonical: boolean;
}[];
/** samples.jsonl lines 1 and 2 are the raw bodies of the IPN_GO and IPN_DOC vectors. */
const rawBodies = readFileSync(fixturePath('nowpayments/samples.jsonl'), 'utf8').split('\n').slice(0, 2);

describe('IPN signature (docs/BILLING.md)', () => {
  it.each(vectors.map((v, i) => [v.name, v, rawBodies[i]] as const))('%s: canonical text and signature match the vector', (_name, vector, raw) => {
    expect(raw === vector.canonical_string).toBe(vector.raw_body_equals_canonical);
    const body = JSON.parse(raw);
    expect(canonicalJson(body)).toBe(vector.canonical_string);
    expect(signIpn(body, vector.secret)).toBe(vector.x_nowpayments_sig);
    expect(verifyIpnSignature(body, vector.x_nowpayments_sig, vector.secret)).toBe(true);
    expect(verifyIpnSignature(body, vector.x_nowpayments_sig.toUpperCase(), vector.secret)).toBe(true);
    expect(verifyIpnSignature(body, vector.x_nowpayments_sig, 'another-secret')).toBe(false);
  });

  const [go] = vectors;
  const body = () => JSON.parse(rawBodies[0]) as Record<string, unknown>;

  it('rejects a tampered body and a tampered signature', () => {
    expect(verifyIpnSignature({ ...body(), price_amount: 321 }, go.x_nowpayments_sig, go.secret)).toBe(false);
    expect(verifyIpnSignature({ ...body(), payment_status: 'partially_paid' }, go.x_nowpayments_sig, go.secret)).toBe(false);
    const flipped = (go.x_nowpayments_sig[0] === 'b' ? 'c' : 'b') + go.x_nowpayments_sig.slice(1);
    expect(verifyIpnSignature(body(), flipped, go.secret)).toBe(false);
    expect(verifyIpnSignature(body(), go.x_nowpayments_sig.slice(0, -2), go.secret)).toBe(false);
    expect(verifyIpnSignature(body(), `${go.x_nowpayments_sig}00`, go.secret)).toBe(false);
    expect(verifyIpnSignature(body(), 'z'.repeat(128), go.secret)).toBe(false);
  });

  it('rejects a missing or empty signature', () => {
    expect(verifyIpnSignature(body(), undefined, go.secret)).toBe(false);
    expect(verifyIpnSignature(body(), '', go.secret)).toBe(false);
  });

  it('sorts nested keys: the fee object in any order signs the same, a changed fee does not', () => {
    const reordered = { ...body(), fee: { withdrawalFee: 0, serviceFee: 0, depositFee: 0, currency: 'eth' } };
    expect(JSON.stringify(reordered)).not.toBe(go.canonical_string);
    expect(canonicalJson(reordered)).toBe(go.canonical_string);
    expect(verifyIpnSignature(reordered, go.x_nowpayments_sig, go.secret)).toBe(true);
    expect(verifyIpnSignature({ ...body(), fee: { ...(body().fee as object), serviceFee: 0.01 } }, go.x_nowpayments_sig, go.secret)).toBe(false);
    expect(canonicalJson({ b: [{ z: 1, a: { d: 1, c: 2 } }], a: null })).toBe('{"a":null,"b":[{"a":{"c":2,"d":1},"z":1}]}');
  });

  it('bounds the nesting: a body at the bound verifies, a deeper one never does (and never overflows the stack)', () => {
    const nest = (levels: number): unknown => (levels === 0 ? 1 : { z: nest(levels - 1), a: [] });
    // The body, MAX_IPN_DEPTH - 2 objects one inside the other, and the innermost one's array: MAX_IPN_DEPTH levels.
    const deepest = { ...body(), extra: nest(MAX_IPN_DEPTH - 2) };
    expect(verifyIpnSignature(deepest, signIpn(deepest, go.secret), go.secret)).toBe(true);
    const tooDeep = { ...body(), extra: nest(MAX_IPN_DEPTH - 1) };
    expect(verifyIpnSignature(tooDeep, go.x_nowpayments_sig, go.secret)).toBe(false);
    expect(() => signIpn(tooDeep, go.secret)).toThrow(`nested deeper than ${MAX_IPN_DEPTH} levels`);
    const arrays = JSON.parse(`{"fee":${'['.repeat(8000)}${']'.repeat(8000)}}`);
    expect(verifyIpnSignature(arrays, go.x_nowpayments_sig, go.secret)).toBe(false);
  });

  it('signs amounts as sent: a string and a number are different bodies, each valid with its own signature', () => {
    const asString = { ...body(), price_amount: '3.21', actually_paid: '0' };
    const asNumber = body();
    const stringSig = signIpn(asString, go.secret);
    expect(canonicalJson(asString)).toContain('"price_amount":"3.21"');
    expect(verifyIpnSignature(asString, stringSig, go.secret)).toBe(true);
    expect(verifyIpnSignature(asNumber, go.x_nowpayments_sig, go.secret)).toBe(true);
    expect(verifyIpnSignature(asNumber, stringSig, go.secret)).toBe(false);
    expect(verifyIpnSignature(asString, go.x_nowpayments_sig, go.secret)).toBe(false);
  });
});
