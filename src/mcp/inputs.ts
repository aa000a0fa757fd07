import { z } from 'zod';
import { invalidParameter } from '../http/errors.js';
import { MIN_SHARES } from '../http/params.js';
import { MAX_TIME, parseTime } from '../time.js';

/**
 * The MCP tools' input schemas (docs/MCP.md §2). Native JSON types, not the REST query schemas of
 * http/params.ts: those parse strings, so their JSON Schema would say `"type": "string"` and an agent's
 * number would be refused. Each schema carries the rule its 400 message states, in the REST API's
 * words ("limit must be an integer between 1 and 50"): the SDK's own messages name zod internals.
 */
const RULES = new WeakMap<z.ZodType, string>();

function ruled<T extends z.ZodType>(schema: T, rule: string): T {
  RULES.set(schema, rule);
  return schema;
}

/** The rule of an input field, looking through `.optional()`. */
function ruleOf(schema: z.ZodType | undefined): string | undefined {
  if (!schema) return undefined;
  return RULES.get(schema) ?? (schema instanceof z.ZodOptional ? ruleOf(schema.unwrap() as z.ZodType) : undefined);
}

/** ISO 8601 in UTC or with an offset: a date alone (its 00:00 UTC), or a date and time with a zone. */
const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;

const TIME_RULE = 'must be Unix milliseconds (an integer, 0 or more) or ISO 8601 text such as 2026-06-01T12:00:00Z';

/** A time: Unix ms as a number (or its digits), or ISO 8601 text. Read with `toMs`. */
export const instant = (description: string) =>
  ruled(z.union([z.number().int().min(0).max(MAX_TIME), z.string().regex(/^\d{1,16}$/), z.string().regex(ISO)]).describe(description), TIME_RULE);

/** A time input as Unix ms; `name` for the 400 of a date that does not exist (2026-02-30). */
export function toMs(name: string, value: number | string): number;
export function toMs(name: string, value: number | string | undefined): number | undefined;
export function toMs(name: string, value: number | string | undefined): number | undefined {
  if (value === undefined || typeof value === 'number') return value;
  const ms = parseTime(value);
  if (ms === undefined) throw invalidParameter(name, `${name} ${TIME_RULE}`);
  return ms;
}

export const assetId = () =>
  ruled(
    z
      .string()
      .regex(/^\d{1,100}$/)
      .describe('Outcome token id (asset_id): 1-100 decimal digits, as search_markets lists them'),
    'must be 1-100 decimal digits',
  );

export const intIn = (min: number, max: number, description: string) =>
  ruled(z.number().int().min(min).max(max).describe(description), `must be an integer between ${min} and ${max}`);

export const oneOf = <const T extends readonly [string, ...string[]]>(values: T, description: string) =>
  ruled(z.enum(values).describe(description), `must be one of ${values.join(', ')}`);

export const shares = (description: string) =>
  ruled(z.number().min(MIN_SHARES).max(Number.MAX_VALUE).describe(description), `must be a number of at least ${MIN_SHARES.toFixed(6)}`);

export const text = (max: number, description: string) => ruled(z.string().max(max).describe(description), `must be text of at most ${max} characters`);

/**
 * Arguments checked against a tool's input schema; the first bad one is a 400 `invalid_parameter`
 * naming it (docs/API.md §5), as the REST API words it.
 */
export function parseArguments<S extends z.ZodObject>(schema: S, args: unknown): z.output<S> {
  const result = schema.safeParse(args ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  // Input objects are strict: a misspelt argument is refused, never silently ignored.
  if (issue.code === 'unrecognized_keys') {
    throw invalidParameter(issue.keys[0], `Unknown argument ${issue.keys[0]}; this tool takes ${Object.keys(schema.shape).join(', ')}`);
  }
  const name = issue.path.length ? String(issue.path[0]) : 'arguments';
  const rule = ruleOf(schema.shape[name] as z.ZodType | undefined);
  if (!rule) throw invalidParameter(name, issue.message);
  throw invalidParameter(name, issue.code === 'invalid_type' && issue.input === undefined ? `${name} is required; it ${rule}` : `${name} ${rule}`);
}

/** `start` after `end`: the REST API's 400 (docs/API.md §1). */
export function assertOrdered(start: number | undefined, end: number | undefined, names: [string, string] = ['start', 'end']): void {
  if (start !== undefined && end !== undefined && start > end) throw invalidParameter(names[0], `${names[0]} must be less than or equal to ${names[1]}`);
}
