import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { openAccountStore } from '../src/accounts/index.js';
import type { AccountStore } from '../src/accounts/store.js';
import { createApp } from '../src/app.js';
import { generateApiKey, hashApiKey } from '../src/auth/keys.js';
import { createEngine, type Engine } from '../src/clickhouse/index.js';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { seedDemo } from '../src/demo/seed.js';
import { createHttpServer } from '../src/http/http-server.js';
import { ARTIFACTS, describeInBrowser, launchBrowser } from './support/browser.js';
import { freePort } from './support/global-setup.js';

/**
 * A newcomer's first look at the demo (issue 26), in a real Chromium: the first-start demo dataset
 * (capture story included, as `npm start` loads it), signed in with a key, the most active market's
 * page: the coverage strip shows every condition (unknown, missing, degraded, available) with the
 * reconnect and a drifted book, and "Replay from here" gives a URL to copy, whose replay a WebSocket
 * client then runs to its end. Screenshots: test-artifacts/dashboard-demo-coverage.png and
 * test-artifacts/dashboard-replay.png.
 */
const DAY = 86_400_000;
const MINUTE = 60_000;

describeInBrowser('test/demo.browser.test.ts')('the demo in a real browser', () => {
  let dir: string;
  let engine: Engine;
  let accounts: AccountStore;
  let server: Server;
  let base: string;
  let key: string;
  let context: BrowserContext;
  let page: Page;
  let asset: { asset_id: string; last_seen: string };
  const visited: string[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tickhouse-demo-browser-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const config = loadConfig({ DATA_DIR: dir, HOST: '127.0.0.1', PORT: String(port), PUBLIC_URL: base, DEMO_DATA: '0', LOG_LEVEL: 'silent' });
    engine = createEngine(config);
    await runMigrations(engine);
    accounts = await openAccountStore(config);
    await seedDemo(engine, { ticks: 30_000, captureStory: true });
    key = generateApiKey(config.API_KEY_PREFIX);
    const now = Date.now();
    await accounts.createAccount({ email: null, keyHash: hashApiKey(key), plan: 'unlimited', plan_expires_at: now + 30 * DAY, now });
    // As main.ts serves it: WebSocket upgrades go to the replay.
    const app = createApp({ config, engine, accounts, clock: systemClock });
    server = createHttpServer(app.fetch, app.replay);
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
    [asset] = (await (await fetch(`${base}/v1/markets?limit=1`)).json()).data;

    context = await launchBrowser(join(dir, 'chromium'), { viewport: { width: 1400, height: 1000 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('framenavigated', (frame) => visited.push(frame.url()));
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    await accounts?.close();
    await engine?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('signs in with the key and opens the most active market', async () => {
    await page.goto(`${base}/#/account`);
    await page.getByLabel('API key', { exact: true }).fill(key);
    await page.getByTestId('signin-button').click();
    await expect.poll(() => page.getByTestId('plan-name').textContent()).toBe('unlimited');
    await page.getByTestId('tab-data').click();
    await page.getByTestId('market-link').first().click();
    await expect.poll(() => page.getByTestId('asset-id').textContent()).toBe(asset.asset_id);
  });

  it('shows every coverage condition, the reconnect and the drifted books', async () => {
    const strip = page.getByTestId('coverage-strip');
    const cells = strip.locator('.cov-day');
    await expect.poll(() => cells.count()).toBe(4);
    expect(await cells.evaluateAll((els) => els.map((e) => e.getAttribute('data-condition')))).toEqual(['unknown', 'missing', 'degraded', 'available']);
    // Four conditions, four colours a reader can tell apart.
    const colours = await cells.evaluateAll((els) => els.map((e) => getComputedStyle(e).backgroundColor));
    expect(new Set(colours).size).toBe(4);
    expect(colours).not.toContain('rgba(0, 0, 0, 0)');
    expect(await strip.locator('.cov-drift').count()).toBeGreaterThan(0);
    expect(await strip.locator('.cov-gap-disconnected').count()).toBe(2);
    expect(await strip.locator('.cov-gap-unknown').count()).toBe(1);
    expect(await strip.locator('.coverage-summary').textContent()).toMatch(/1 unknown.*1 missing.*1 degraded.*1 available.*[1-9]\d* drifted · 1 reconnect$/);

    const tip = strip.getByRole('tooltip');
    const tipFor = async (n: number) => {
      await cells.nth(n).hover();
      await expect.poll(() => tip.isVisible()).toBe(true);
      return (await tip.textContent()) ?? '';
    };
    expect(await tipFor(0)).toContain(': no capture record');
    expect(await tipFor(1)).toMatch(/gaps 24 h 0 min.*: socket disconnected/);
    const degraded = await tipFor(2);
    expect(degraded).toContain('1 reconnect, 1 re-synced');
    expect(degraded).toMatch(/drifted book/);
    expect(await tipFor(3)).toContain('gaps none');
    await page.mouse.move(0, 0);
    await strip.scrollIntoViewIfNeeded();
    await strip.screenshot({ path: join(ARTIFACTS, 'dashboard-demo-coverage.png') });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-demo-asset.png'), fullPage: true });
  });

  it('gives a replay URL to copy, never a link, whose replay runs to its end', async () => {
    const hi = Date.parse(`${asset.last_seen.replace(' ', 'T')}Z`);
    await page.getByRole('button', { name: 'Latest' }).click();
    // At "Latest" the window is the last hour up to the last tick, not an empty one.
    await expect.poll(() => page.getByTestId('replay-window').textContent()).toContain(`→ ${new Date(hi).toISOString().slice(0, 19).replace('T', ' ')} UTC`);
    await page.getByTestId('replay-length').selectOption({ label: '10 minutes' });
    await page.getByTestId('replay-speed').selectOption('1000');
    expect(await page.getByTestId('replay-window').textContent()).toContain('plays in under a minute');
    const shown = await page.getByTestId('replay-url').inputValue();
    expect(shown).not.toContain(key);
    expect(shown).toContain(`${key.slice(0, 12)}…${key.slice(-4)}`);
    await page.getByTestId('replay-copy').click();
    await expect.poll(() => page.getByTestId('replay-copy').textContent()).toBe('Copied');
    const copied = new URL(await page.evaluate(() => navigator.clipboard.readText()));
    expect(Object.fromEntries(copied.searchParams)).toEqual({ from: String(hi - 10 * MINUTE), to: String(hi), speed: '1000', key });
    expect([copied.protocol, copied.host, copied.pathname]).toEqual(['ws:', new URL(base).host, '/v1/replay/market']);
    expect(await page.locator('a[href^="ws"]').count()).toBe(0);
    await page.getByTestId('replay-control').screenshot({ path: join(ARTIFACTS, 'dashboard-replay.png') });

    // The copied URL, pasted into a bot: the books, then the events, then 1000 "replay complete".
    const ws = new WebSocket(copied.href);
    const messages: unknown[] = [];
    ws.on('open', () => ws.send(JSON.stringify({ assets_ids: [asset.asset_id], type: 'market' })));
    ws.on('message', (data) => messages.push(JSON.parse(data.toString())));
    const [code, reason] = await new Promise<[number, string]>((resolve) => ws.on('close', (c, r) => resolve([c, r.toString()])));
    expect([code, reason]).toEqual([1000, 'replay complete']);
    expect((messages[0] as { event_type: string }[])[0].event_type).toBe('book');
    expect(messages.length).toBeGreaterThan(1);
  });

  it('never put the key in the address bar, and threw no script error', () => {
    expect(visited.length).toBeGreaterThan(0);
    expect(visited.filter((u) => u.includes(key))).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
