import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { type AccountApp, startAccountApp } from './support/account-app.js';
import { describeEachStore } from './support/account-stores.js';
import { createTestEngine, type TestEngine } from './support/engine.js';

const NOW = Date.UTC(2026, 5, 24, 15, 30, 0);

let engine: TestEngine;
beforeAll(async () => {
  engine = await createTestEngine();
});
afterAll(async () => {
  await engine?.close();
});

const register = (t: AccountApp, body?: string, headers: Record<string, string> = {}) => t.app.request('/v1/register', { method: 'POST', body, headers });

describeEachStore('POST /v1/register and GET /v1/me on the %s store', ({ redisUrl, redisCluster }) => {
  let t: AccountApp;
  let clock: ManualClock;
  beforeAll(async () => {
    clock = new ManualClock(NOW);
    t = await startAccountApp({ engine: engine.engine, clock, redisUrl, redisCluster });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('accepts no body, {}, and an e-mail sent as JSON or by curl -d; /v1/me shows the account', async () => {
    const variants: [string | undefined, Record<string, string>, string | null][] = [
      [undefined, {}, null],
      ['', { 'Content-Type': 'application/json' }, null],
      ['{}', { 'Content-Type': 'application/json' }, null],
      ['{"email": null}', { 'Content-Type': 'application/json' }, null],
      ['{"email": "ada@example.com"}', { 'Content-Type': 'application/json' }, 'ada@example.com'],
      ['{"email": "bob@example.org"}', { 'Content-Type': 'application/x-www-form-urlencoded' }, 'bob@example.org'],
    ];
    for (const [body, headers, email] of variants) {
      clock.set(NOW);
      const res = await register(t, body, headers);
      expect(res.status, String(body)).toBe(201);
      const { data } = await res.json();
      expect(Object.keys(data)).toEqual(['api_key', 'plan', 'message', 'example']);
      expect(data.plan).toBe('free');
      const meRes = await t.call(data.api_key, '/v1/me');
      expect(meRes.status).toBe(200);
      const me = await meRes.json();
      expect(Object.keys(me)).toEqual(['success', 'data']);
      expect(Object.keys(me.data)).toEqual(['id', 'email', 'plan', 'plan_active', 'plan_expires_at', 'data_access_days', 'rate_limit_daily', 'requests_today']);
      expect(me.data).toEqual({
        id: me.data.id,
        email,
        plan: 'free',
        plan_active: true,
        plan_expires_at: null,
        data_access_days: 0,
        rate_limit_daily: 100,
        requests_today: 0,
      });
      expect(me.data.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      clock.advance(3_600_000);
    }
  });

  it('rejects a bad e-mail (param email) and a body that is not a JSON object (param body)', async () => {
    clock.set(NOW + 10 * 3_600_000);
    for (const email of ['"not-an-email"', '"a@"', '42', '""', '["a@b.co"]', `"${'a'.repeat(250)}@example.com"`]) {
      const res = await register(t, `{"email": ${email}}`, { 'Content-Type': 'application/json' });
      expect(res.status, email).toBe(400);
      expect(await res.json()).toEqual({
        detail: { error: 'invalid_parameter', message: 'email must be a valid e-mail address (at most 254 characters), or be left out.', param: 'email' },
      });
    }
    for (const body of ['{"email":', '[]', '"x"', 'null', 'email=a@b.co']) {
      const res = await register(t, body, { 'Content-Type': 'application/json' });
      expect(res.status, body).toBe(400);
      expect(await res.json()).toEqual({
        detail: { error: 'invalid_parameter', message: 'The body must be empty or a JSON object such as {"email": "you@example.com"}.', param: 'body' },
      });
    }
  });

  it('allows 20 registrations per client IP per hour, then 429 too_many_registrations', async () => {
    clock.set(Date.UTC(2026, 5, 25, 9, 15, 0));
    for (let i = 0; i < 20; i++) expect((await register(t)).status).toBe(201);
    const refused = await register(t);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      detail: { error: 'too_many_registrations', message: 'Too many registrations from this address: at most 20 per hour.', limit: 20 },
    });
    expect(refused.headers.get('retry-after')).toBe(String(45 * 60));
    clock.set(Date.UTC(2026, 5, 25, 10, 0, 0));
    expect((await register(t)).status).toBe(201);
  });
});

describe('client IP behind a trusted proxy', () => {
  async function listen(env: Record<string, string>) {
    const t = await startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW), env });
    const server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const post = (forwardedFor?: string) =>
      fetch(`${base}/v1/register`, { method: 'POST', headers: forwardedFor ? { 'X-Forwarded-For': forwardedFor } : {} }).then((r) => r.status);
    return {
      post,
      close: async () => {
        await new Promise((r) => server.close(r));
        await t.close();
      },
    };
  }

  it('uses the first X-Forwarded-For entry only when the socket peer is TRUSTED_PROXY', async () => {
    const proxied = await listen({ TRUSTED_PROXY: '127.0.0.1' });
    try {
      for (let i = 0; i < 20; i++) expect(await proxied.post('203.0.113.7, 10.0.0.1')).toBe(201);
      expect(await proxied.post('203.0.113.7')).toBe(429);
      expect(await proxied.post('203.0.113.8, 203.0.113.7')).toBe(201);
    } finally {
      await proxied.close();
    }

    const direct = await listen({});
    try {
      // Without a trusted proxy the header is the client's own claim: ignored, the socket address counts.
      for (let i = 0; i < 20; i++) expect(await direct.post(`198.51.100.${i}`)).toBe(201);
      expect(await direct.post('198.51.100.99')).toBe(429);
    } finally {
      await direct.close();
    }
  });
});

describe('OpenAPI', () => {
  it('documents register, me and regenerate', async () => {
    const t = await startAccountApp({ engine: engine.engine, clock: new ManualClock(NOW) });
    try {
      const doc = await (await t.app.request('/v1/openapi.json')).json();
      expect(Object.keys(doc.paths['/v1/register'])).toEqual(['post']);
      expect(doc.paths['/v1/register'].post.responses['201']).toBeDefined();
      expect(doc.paths['/v1/register'].post.requestBody.content['application/json'].schema.properties.email).toEqual({ type: 'string', format: 'email' });
      expect(doc.paths['/v1/me'].get.security).toEqual([{ bearer: [] }]);
      expect(doc.paths['/v1/me'].get.responses['200'].content['application/json'].schema.properties.data).toEqual({ $ref: '#/components/schemas/Account' });
      expect(Object.keys(doc.components.schemas.Account.properties)).toEqual([
        'id',
        'email',
        'plan',
        'plan_active',
        'plan_expires_at',
        'data_access_days',
        'rate_limit_daily',
        'requests_today',
      ]);
      expect(doc.paths['/v1/keys/regenerate'].post.security).toEqual([{ bearer: [] }]);
    } finally {
      await t.close();
    }
  });
});
