import { z } from '@hono/zod-openapi';
import { MAX_TIME } from '../time.js';
import { isKalshiAssetId } from '../venues/kalshi/ids.js';

/**
 * Query parameter schemas (docs/API.md §5). Each parses the raw query string itself so the 400 message
 * says exactly what is allowed, e.g. "limit must be an integer between 1 and 100000".
 */
export function parsed<T>(name: string, allowed: string, parse: (raw: string) => T | undefined) {
  return z.string({ error: (iss) => (iss.input === undefined ? `${name} is required; it ${allowed}` : `${name} ${allowed}`) }).transform((raw, ctx) => {
    const value = parse(raw);
    if (value === undefined) {
      ctx.issues.push({ code: 'custom', message: `${name} ${allowed}`, input: raw });
      return z.NEVER;
    }
    return value;
  });
}

/**
 * The same with one whole message, missing or bad (the compatible surfaces' own texts: Polymarket's
 * `Invalid token id`, Kalshi's parameter messages).
 */
export function messageParam<T>(message: string, parse: (raw: string) => T | undefined) {
  return z.string({ error: message }).transform((raw, ctx) => {
    const value = parse(raw);
    if (value === undefined) {
      ctx.issues.push({ code: 'custom', message, input: raw });
      return z.NEVER;
    }
    return value;
  });
}

const INTEGER = /^\d+$/;

/** An integer in [min, max]. */
export const intParam = (name: string, min: number, max: number) =>
  parsed(name, `must be an integer between ${min} and ${max}`, (raw) =>
    INTEGER.test(raw) && Number(raw) >= min && Number(raw) <= max ? Number(raw) : undefined,
  ).openapi({ type: 'integer', minimum: min, maximum: max });

/** Unix milliseconds: a non-negative integer (docs/API.md §1). */
export const timeParam = (name: string) =>
  parsed(name, 'must be an integer of Unix milliseconds (UTC), 0 or more', (raw) =>
    INTEGER.test(raw) && Number(raw) <= MAX_TIME ? Number(raw) : undefined,
  ).openapi({ type: 'integer', minimum: 0, example: 1766481546487 });

/**
 * The smallest share amount that means anything: sizes and prices are kept to 6 decimals, so a
 * smaller order fills 0 shares at every level (5e-324 would "fill" at an average price of 0).
 */
export const MIN_SHARES = 0.000001;

/** A decimal number of shares, at least MIN_SHARES (fractions allowed). */
export const positiveNumberParam = (name: string) =>
  parsed(name, `must be a number of at least ${MIN_SHARES.toFixed(6)}`, (raw) =>
    /^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(raw) && Number(raw) >= MIN_SHARES && Number.isFinite(Number(raw)) ? Number(raw) : undefined,
  ).openapi({ type: 'number', minimum: MIN_SHARES, example: 100 });

export const enumParam = <const T extends readonly [string, ...string[]]>(name: string, values: T) =>
  parsed(name, `must be one of ${values.join(', ')}`, (raw) => (values.includes(raw) ? (raw as T[number]) : undefined)).openapi({
    type: 'string',
    enum: [...values],
  });

/**
 * Outcome token id: 1–100 decimal digits (Polymarket), or a Kalshi market as `kalshi:<ticker>`
 * (docs/KALSHI.md §1; the form is src/venues/kalshi/ids.ts's). The 400 message names the Polymarket form,
 * as it always did; the OpenAPI pattern states both.
 */
export const assetIdParam = () =>
  parsed('asset_id', 'must be 1-100 decimal digits', (raw) => (/^\d{1,100}$/.test(raw) || isKalshiAssetId(raw) ? raw : undefined)).openapi({
    type: 'string',
    pattern: '^(\\d{1,100}|kalshi:[A-Za-z0-9._-]{1,100})$',
    example: '25245433628208476987364023432306599125597948324625578977436890641930158259698',
  });

/** A free-text filter of at most `max` characters. */
export const textParam = (name: string, max: number) =>
  parsed(name, `must be text of at most ${max} characters`, (raw) => (raw.length <= max ? raw : undefined)).openapi({
    type: 'string',
    maxLength: max,
  });

/** Adds the `start > end` (or `since > until`) rule; the issue names `startName`. */
export function orderedRange<S extends z.ZodType>(schema: S, startName: string, endName: string) {
  return schema.superRefine((value, ctx) => {
    const v = value as Record<string, number | undefined>;
    if (v[startName] !== undefined && v[endName] !== undefined && v[startName]! > v[endName]!) {
      ctx.addIssue({ code: 'custom', path: [startName], message: `${startName} must be less than or equal to ${endName}` });
    }
  });
}

/** Replay speed (docs/TIME-MACHINE.md §1): a number in (0, 10000], or `max` (Infinity: as fast as the client reads). */
export const speedParam = () =>
  parsed('speed', 'must be a number greater than 0 and at most 10000, or max', (raw) => {
    if (raw === 'max') return Infinity;
    const n = Number(raw);
    return /^(\d+\.?\d*|\.\d+)$/.test(raw) && n > 0 && n <= 10_000 ? n : undefined;
  }).openapi({
    type: 'string',
    pattern: '^(max|\\d+\\.?\\d*|\\.\\d+)$',
    example: 'max',
    description: 'Replay ms per wall ms; `max` sends as fast as the client reads. Default 1 (real time).',
  });

/**
 * A comma-separated subset of `values`, or `all` (every one): the opt-in columns of /v1/ticks and its
 * export. Returned in `values` order, whatever order the client wrote them in; repeats count once.
 */
export const fieldListParam = <const T extends readonly [string, ...string[]]>(name: string, values: T) =>
  parsed(name, `must be a comma-separated list of ${values.join(', ')}, or all`, (raw) => {
    if (raw === 'all') return [...values];
    const asked = raw.split(',');
    if (!asked.every((f) => values.includes(f))) return undefined;
    return values.filter((v) => asked.includes(v)) as T[number][];
  }).openapi({
    type: 'string',
    example: 'all',
    description: `Extra columns, appended in this order: ${values.join(', ')} (comma-separated), or \`all\``,
  });
