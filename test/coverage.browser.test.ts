import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServerType, serve } from '@hono/node-server';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openAccountStore } from '../src/accounts/index.js';
import type { AccountStore } from '../src/accounts/store.js';
import { createApp } from '../src/app.js';
import { generateApiKey, hashApiKey } from '../src/auth/keys.js';
import { createEngine, type Engine } from '../src/clickhouse/index.js';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { replayLines } from '../src/ingest/frame-files.js';
import { ARTIFACTS, describeInBrowser, launchBrowser } from './support/browser.js';
import { bookFrame, capture, changeFrame, type Pair } from './support/coverage-lines.js';
import { freePort } from './support/global-setup.js';

/**
 * The asset page's coverage strip and its order-book ladder in a real Chromium at 1,400 × 1,100:
 * a recorder archive (written by hand) of three days and today, with a deep book.
 * Screenshot: test-artifacts/dashboard-coverage.png.
 */
const ASSET = '720000000000000000000000000000000000000000000000000000000000000000000000001';
const MARKET = `0x${'c7'.repeat(32)}`;
const H = 3_600_000;
const DAY = 24 * H;

/** 40 bid levels 0.01..0.40 and 40 ask levels 0.45..0.84: far deeper than the ladder's box. */
const deep = (): { bids: Pair[]; asks: Pair[] } => ({
  bids: Array.from({ length: 40 }, (_, i) => [((i + 1) / 100).toFixed(2), String(100 + i)]),
  asks: Array.from({ length: 40 }, (_, i) => [((45 + i) / 100).toFixed(2), String(200 + i)]),
});

function archive(now: number) {
  const today = now - (now % DAY);
  const [d3, d2, d1] = [3, 2, 1].map((n) => today - n * DAY);
  const run = 'rec-browser';
  const book = (t: number) => bookFrame(ASSET, t, deep().bids, deep().asks);
  const drifted: Pair[] = deep().bids.map(([p, s], i) => (i < 3 ? [p, String(Number(s) + 7)] : p === '0.40' ? [p, '150'] : [p, s]));
  const lines = [
    capture('start', d3 + 12 * H, run, 0),
    capture('subscribe', d3 + 12 * H, run, 1, [ASSET]),
    capture('open', d3 + 12 * H, run, 1, [ASSET]),
    book(d3 + 12 * H + 10),
    capture('resync', d3 + 12 * H + 10, run, 1, [ASSET]),
    book(d2 + 3 * H),
    changeFrame(ASSET, d1 + 1 * H, 'BUY', '0.4', '150'),
    // Re-sent with 3 bid sizes changed that no event announced: drifted.
    bookFrame(ASSET, d1 + 5 * H, drifted, deep().asks),
    capture('close', d1 + 9 * H, run, 1, [ASSET]),
    capture('open', d1 + 9 * H + 30_000, run, 1, [ASSET]),
    bookFrame(ASSET, d1 + 9 * H + 30_010, drifted, deep().asks),
    capture('resync', d1 + 9 * H + 30_010, run, 1, [ASSET]),
    changeFrame(ASSET, now - 60_000, 'SELL', '0.45', '250'),
  ];
  return { lines, days: [d3, d2, d1, today] };
}

describeInBrowser('test/coverage.browser.test.ts')('coverage strip and ladder in a real browser', () => {
  let dir: string;
  let engine: Engine;
  let accounts: AccountStore;
  let server: ServerType;
  let base: string;
  let context: BrowserContext;
  let page: Page;
  let days: number[];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tickhouse-coverage-browser-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const config = loadConfig({ DATA_DIR: dir, HOST: '127.0.0.1', PORT: String(port), PUBLIC_URL: base, DEMO_DATA: '0', LOG_LEVEL: 'silent' });
    engine = createEngine(config);
    await runMigrations(engine);
    accounts = await openAccountStore(config);
    const now = Date.now();
    const a = archive(now);
    days = a.days;
    const markets = [
      {
        conditionId: MARKET,
        question: 'Will coverage be shown?',
        slug: 'coverage',
        outcomes: '["Yes", "No"]',
        clobTokenIds: JSON.stringify([ASSET, '720000000000000000000000000000000000000000000000000000000000000000000000002']),
      },
    ];
    await replayLines(engine, a.lines, { sourceId: 'coverage-browser', markets });
    const key = generateApiKey(config.API_KEY_PREFIX);
    await accounts.createAccount({ email: null, keyHash: hashApiKey(key), plan: 'monthly', plan_expires_at: now + 30 * DAY, now });
    server = serve({ fetch: createApp({ config, engine, accounts, clock: systemClock }).fetch, port, hostname: '127.0.0.1' });

    context = await launchBrowser(join(dir, 'chromium'), { viewport: { width: 1400, height: 1100 } });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (err) => pageErrors.push(err.message));
    await page.goto(`${base}/#/account`);
    await page.evaluate((k) => localStorage.setItem('tickhouse.api_key', k), key);
    await page.goto(`${base}/#/asset/${ASSET}`);
  });

  afterAll(async () => {
    await context?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    await accounts?.close();
    await engine?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('shows one cell per day with its condition, and a tooltip per day', async () => {
    const strip = page.getByTestId('coverage-strip');
    const cells = strip.locator('.cov-day');
    await expect.poll(() => cells.count()).toBe(4);
    // First day: half before the first run (unknown); then available; then a drifted book and a
    // 30 s disconnect; today: captured since midnight.
    expect(await cells.evaluateAll((els) => els.map((e) => e.getAttribute('data-condition')))).toEqual(['degraded', 'available', 'degraded', 'available']);
    expect(await strip.locator('.cov-drift').count()).toBe(1);
    await cells.nth(2).hover();
    const tip = strip.getByRole('tooltip');
    await expect.poll(() => tip.isVisible()).toBe(true);
    const date = new Date(days[2]).toISOString().slice(0, 10);
    expect(await tip.locator('strong').textContent()).toBe(`${date} — degraded`);
    const text = await tip.textContent();
    expect(text).toContain('gaps 30 s');
    expect(text).toContain(': socket disconnected');
    expect(text).toContain('1 reconnect, 1 re-synced');
    expect(text).toContain('1 drifted book (most levels differing: 3)');
    // Keyboard users get the same tooltip.
    await cells.nth(1).focus();
    await expect.poll(() => tip.locator('strong').textContent()).toBe(`${new Date(days[1]).toISOString().slice(0, 10)} — available`);
  });

  it('opens the ladder centred on the spread, best levels in view', async () => {
    await page.getByTestId('book-datetime').waitFor();
    const wrap = page.locator('.ladder-wrap');
    const spread = page.locator('.ladder .spread-row');
    const [w, s] = [(await wrap.boundingBox())!, (await spread.boundingBox())!];
    const middle = w.y + w.height / 2;
    expect(Math.abs(s.y + s.height / 2 - middle)).toBeLessThan(s.height);
    for (const best of [page.locator('.ladder tr.bid').first(), page.locator('.ladder tr.ask').last()]) {
      const b = (await best.boundingBox())!;
      expect(b.y).toBeGreaterThanOrEqual(w.y);
      expect(b.y + b.height).toBeLessThanOrEqual(Math.min(w.y + w.height, 1100));
    }
    await page.mouse.move(0, 0);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-coverage.png'), fullPage: false });
    expect(pageErrors).toEqual([]);
  });
});
