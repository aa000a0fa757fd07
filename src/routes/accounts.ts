import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { accountView } from '../accounts/account-view.js';
import { clientIp } from '../auth/client-ip.js';
import { generateApiKey, hashApiKey } from '../auth/keys.js';
import { invalidKey } from '../auth/middleware.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { created, ok } from '../http/envelope.js';
import { ApiError, invalidParameter } from '../http/errors.js';
import { errorResponses, successResponse } from '../http/openapi.js';
import { PLAN_NAMES } from '../plans.js';
import { utcDay, utcHour } from '../time.js';

/** POST /v1/register, GET /v1/me, POST /v1/keys/regenerate (docs/API.md §3, §4). */
const REGISTRATIONS_PER_IP_PER_HOUR = 20;
const HOUR_MS = 3_600_000;

const registrationSchema = z
  .object({
    api_key: z
      .string()
      .openapi({ description: 'The new key; shown once, cannot be recovered', example: 'th_live_3q2-7wEXAMPLEXAMPLEXAMPLEXAMPLEXAMPLEXAMPLE0' }),
    plan: z.literal('free'),
    message: z.string(),
    example: z.string().openapi({ description: 'A curl command using the key' }),
  })
  .openapi('Registration');

const accountSchema = z
  .object({
    id: z.string().uuid(),
    email: z.string().nullable(),
    plan: z.enum(PLAN_NAMES as [string, ...string[]]),
    plan_active: z.boolean(),
    plan_expires_at: z.string().nullable().openapi({ description: 'ISO 8601 with +00:00; null for free', example: '2026-06-25T00:00:00+00:00' }),
    data_access_days: z.number().int(),
    rate_limit_daily: z.number().int(),
    requests_today: z.number().int(),
  })
  .openapi('Account');

const register = createRoute({
  method: 'post',
  path: '/v1/register',
  operationId: 'register',
  security: [],
  tags: ['accounts'],
  summary: 'Create an account on plan free and get its API key (shown once)',
  description: `No body, \`{}\` or \`{"email": "..."}\`. At most ${REGISTRATIONS_PER_IP_PER_HOUR} registrations per client IP per hour.`,
  request: {
    body: {
      required: false,
      // A plain schema (not zod) documents the body without the route validator: the handler accepts
      // no body at all, or JSON sent with any Content-Type (curl -d sends a form type).
      content: { 'application/json': { schema: { type: 'object', properties: { email: { type: 'string', format: 'email' } }, additionalProperties: false } } },
    },
  },
  responses: {
    201: successResponse('Account created', registrationSchema),
    ...errorResponses(400, 413, 429, 503),
  },
});

const me = createRoute({
  method: 'get',
  path: '/v1/me',
  operationId: 'getAccount',
  tags: ['accounts'],
  summary: 'The account of the key: plan, expiry, limits and requests used today',
  security: [{ bearer: [] }],
  responses: {
    200: successResponse('The account', accountSchema),
    ...errorResponses(401, 503),
  },
});

const regenerate = createRoute({
  method: 'post',
  path: '/v1/keys/regenerate',
  operationId: 'regenerateKey',
  tags: ['accounts'],
  summary: 'Replace the API key; the old key stops working at once',
  description: 'Account id, plan, expiry and the daily counter are unchanged.',
  security: [{ bearer: [] }],
  responses: {
    200: successResponse('The new key (shown once)', z.object({ api_key: z.string() })),
    ...errorResponses(401, 413, 503),
  },
});

const emailSchema = z.email().max(254);

export function registerAccountsRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const prefix = deps.config.API_KEY_PREFIX;

  app.openapi(register, async (c) => {
    const email = parseRegistrationEmail(await c.req.text());
    const now = deps.clock.now();
    const attempts = await deps.accounts.incrementRegistrations(clientIp(c, deps.config.TRUSTED_PROXY), utcHour(now));
    if (attempts > REGISTRATIONS_PER_IP_PER_HOUR) {
      const retryAfter = Math.ceil((HOUR_MS - (now % HOUR_MS)) / 1000);
      throw new ApiError(
        'too_many_registrations',
        `Too many registrations from this address: at most ${REGISTRATIONS_PER_IP_PER_HOUR} per hour.`,
        { limit: REGISTRATIONS_PER_IP_PER_HOUR },
        { 'Retry-After': String(retryAfter) },
      );
    }
    const apiKey = generateApiKey(prefix);
    await deps.accounts.createAccount({ email, keyHash: hashApiKey(apiKey), plan: 'free', plan_expires_at: null, now });
    const data = {
      api_key: apiKey,
      plan: 'free' as const,
      message: 'Store this key now: it is shown only once and cannot be recovered. Send it as Authorization: Bearer <key>.',
      example: `curl -H "Authorization: Bearer ${apiKey}" ${deps.config.publicUrl}/v1/me`,
    };
    return created(c, data);
  });

  app.openapi(me, async (c) => {
    const account = c.get('account');
    const now = deps.clock.now();
    const requestsToday = await deps.accounts.getDaily(account.id, utcDay(now));
    return ok(c, accountView(account, now, requestsToday));
  });

  app.openapi(regenerate, async (c) => {
    const apiKey = generateApiKey(prefix);
    // Of concurrent regenerations with one key, one wins; for the others that key is already dead.
    if (!(await deps.accounts.replaceKey(c.get('account').id, c.get('keyHash'), hashApiKey(apiKey)))) throw invalidKey();
    return ok(c, { api_key: apiKey });
  });
}

/** The optional registration body: nothing, `{}` or `{"email": "<address>"}`. */
function parseRegistrationEmail(text: string): string | null {
  if (!text.trim()) return null;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalidParameter('body', 'The body must be empty or a JSON object such as {"email": "you@example.com"}.');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidParameter('body', 'The body must be empty or a JSON object such as {"email": "you@example.com"}.');
  }
  const email = (body as { email?: unknown }).email;
  if (email === undefined || email === null) return null;
  if (typeof email !== 'string' || !emailSchema.safeParse(email).success) {
    throw invalidParameter('email', 'email must be a valid e-mail address (at most 254 characters), or be left out.');
  }
  return email;
}
