import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServerType, serve } from '@hono/node-server';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openAccountStore } from '../src/accounts/index.js';
import type { AccountStore } from '../src/accounts/store.js';
import { createApp } from '../src/app.js';
import { createEngine, type Engine } from '../src/clickhouse/index.js';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { replayLines } from '../src/ingest/frame-files.js';
import { ARTIFACTS, describeInBrowser, launchBrowser } from './support/browser.js';
import { freePort } from './support/global-setup.js';

/**
 * The dashboard driven by a real Chromium against the real app (chDB + embedded account store +
 * sandbox payments) on a loopback port, with a market ingested through the real replay path.
 * Screenshots of the account and asset pages go to test-artifacts/.
 *
 * Time stands still at NOW, noon UTC, for the service (ManualClock) and for the page (Playwright's
 * clock: Date.now() fixed, timers running): "today", the history window, the daily counter and its
 * reset never depend on how far the wall clock is from UTC midnight, and every text is exact.
 */
const NOW = Date.UTC(2026, 5, 24, 12, 0, 0);

const KEY_FORMAT = /^th_live_[A-Za-z0-9_-]{43}$/;

/** One market, two outcome tokens; the question is what the test searches for. */
const MARKET = `0x${'d4'.repeat(32)}`;
const YES = '710000000000000000000000000000000000000000000000000000000000000000000000001';
const NO = '710000000000000000000000000000000000000000000000000000000000000000000000002';
const QUESTION = 'Will the dashboard browser test pass today?';
const FRAMES = 120;

interface Scenario {
  lines: string[];
  /** Time of each price_change frame of YES, and the best bid it sets. */
  changes: { t: number; bid: number }[];
  start: number;
  end: number;
}

/**
 * Today's data only, so the free plan (history window: since 00:00 UTC) can read all of it: a book
 * for each token at `start` (two hours before NOW), then FRAMES price changes of YES moving its top
 * bid and ask.
 */
function scenario(): Scenario {
  const start = NOW - 2 * 3_600_000;
  const end = NOW - 5000;
  const step = Math.floor((end - start) / (FRAMES + 1));
  const level = (price: number, size: number) => ({ price: price.toFixed(2), size: String(size) });
  const book = (asset: string, t: number) =>
    JSON.stringify({
      event_type: 'book',
      market: MARKET,
      asset_id: asset,
      timestamp: String(t),
      hash: `h${t}${asset.slice(-1)}`,
      bids: [level(0.3, 500), level(0.29, 800), level(0.28, 1200)],
      asks: [level(0.5, 400), level(0.51, 900), level(0.52, 1500)],
    });
  const lines = [book(YES, start), book(NO, start)];
  const changes: Scenario['changes'] = [];
  let bid = 0.3;
  for (let i = 1; i <= FRAMES; i++) {
    const t = start + i * step;
    // A walk between 0.31 and 0.45 for the moving top bid; the moving ask stays 0.02 above it.
    const next = Math.round((0.31 + ((i * 7) % 15) / 100) * 100) / 100;
    // Like the exchange, every entry of a frame carries the top of the book after the whole frame.
    const entry = (side: string, price: number, size: number) => ({
      asset_id: YES,
      price: price.toFixed(2),
      size: String(size),
      side,
      hash: `p${i}${side}${price}`,
      best_bid: next.toFixed(2),
      best_ask: (next + 0.02).toFixed(2),
    });
    const entries = [];
    if (bid !== 0.3) entries.push(entry('BUY', bid, 0), entry('SELL', bid + 0.02, 0));
    entries.push(entry('BUY', next, 100 + i), entry('SELL', next + 0.02, 50 + i));
    lines.push(JSON.stringify({ event_type: 'price_change', market: MARKET, timestamp: String(t), price_changes: entries }));
    changes.push({ t, bid: next });
    bid = next;
  }
  return { lines, changes, start, end };
}

const utcText = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

describeInBrowser('test/dashboard.browser.test.ts')('dashboard in a real browser', () => {
  let dir: string;
  let engine: Engine;
  let accounts: AccountStore;
  let server: ServerType;
  let base: string;
  let context: BrowserContext;
  let page: Page;
  let data: Scenario;
  let firstKey: string;
  let key: string;
  const offOrigin: string[] = [];
  const pageErrors: string[] = [];

  const apiAs = (apiKey: string, path: string) => fetch(`${base}${path}`, { headers: { Authorization: `Bearer ${apiKey}` } });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tickhouse-dashboard-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const config = loadConfig({ DATA_DIR: dir, HOST: '127.0.0.1', PORT: String(port), PUBLIC_URL: base, DEMO_DATA: '0', LOG_LEVEL: 'silent' });
    engine = createEngine(config);
    await runMigrations(engine);
    accounts = await openAccountStore(config);
    data = scenario();
    const markets = [{ conditionId: MARKET, question: QUESTION, slug: 'dashboard-test', outcomes: '["Yes", "No"]', clobTokenIds: JSON.stringify([YES, NO]) }];
    await replayLines(engine, data.lines, { sourceId: 'dashboard-browser-test', markets, checkpoints: false });
    const app = createApp({ config, engine, accounts, clock: new ManualClock(NOW) });
    server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' });

    context = await launchBrowser(join(dir, 'chromium'), { viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    // The page must load nothing from another origin (issue: no script or font from the internet).
    context.on('request', (request) => {
      const url = new URL(request.url());
      if (url.origin !== base && !['blob:', 'data:'].includes(url.protocol)) offOrigin.push(request.url());
    });
    await context.clock.setFixedTime(NOW);
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (err) => pageErrors.push(err.message));
  });

  afterAll(async () => {
    await context?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    await accounts?.close();
    await engine?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves the page and its assets with types, caching and no traversal', async () => {
    const index = await fetch(`${base}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    const chart = await fetch(`${base}/assets/lightweight-charts.js`);
    expect(chart.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(chart.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(await chart.text()).toContain('Lightweight Charts');
    const etag = (await fetch(`${base}/assets/app.js`)).headers.get('etag')!;
    expect((await fetch(`${base}/assets/app.js`, { headers: { 'If-None-Match': etag } })).status).toBe(304);
    for (const path of ['/assets/..%2Fserve.ts', '/assets/%2e%2e%2f%2e%2e%2fpackage.json', '/assets/serve.ts', '/assets/']) {
      expect((await fetch(`${base}${path}`)).status, path).toBe(404);
    }
  });

  it('creates a key and shows it exactly once', async () => {
    await page.goto(`${base}/#/account`);
    await page.getByTestId('register-button').click();
    firstKey = (await page.getByTestId('new-api-key').textContent())!;
    expect(firstKey).toMatch(KEY_FORMAT);
    await expect.poll(() => page.getByTestId('plan-name').textContent()).toBe('free');
    await page.getByTestId('dismiss-key').click();
    await page.reload();
    await page.getByTestId('plan-name').waitFor();
    expect(await page.getByTestId('new-key-panel').count()).toBe(0);
    expect(await page.content()).not.toContain(firstKey);
    expect(await page.getByTestId('current-key').textContent()).toBe(`${firstKey.slice(0, 12)}…${firstKey.slice(-4)}`);
  });

  it('signs out and signs in again by pasting the key', async () => {
    await page.getByTestId('sign-out').click();
    expect(await page.evaluate(() => localStorage.getItem('tickhouse.api_key'))).toBeNull();
    await page.getByLabel('API key', { exact: true }).fill(firstKey);
    await page.getByTestId('signin-button').click();
    await expect.poll(() => page.getByTestId('plan-name').textContent()).toBe('free');
    expect(await page.getByTestId('history-window').textContent()).toBe('Today only (from 2026-06-24 00:00 UTC)');
  });

  it('counts a data request on the usage meter', async () => {
    expect(await page.getByTestId('usage-meter').getAttribute('value')).toBe('0');
    expect(await page.getByTestId('usage-meter').getAttribute('max')).toBe('100');
    expect((await apiAs(firstKey, `/v1/orderbook?asset_id=${YES}`)).status).toBe(200);
    await page.reload();
    await expect.poll(() => page.getByTestId('usage-meter').getAttribute('value')).toBe('1');
    expect(await page.getByTestId('usage-text').textContent()).toBe('1 / 100');
    expect(await page.getByTestId('usage-pill').textContent()).toBe('1 / 100 today');
  });

  it('regenerates the key after confirmation; the old key is rejected', async () => {
    await page.getByTestId('regenerate-key').click();
    await expect.poll(() => page.getByTestId('regenerate-dialog').isVisible()).toBe(true);
    await page.getByTestId('confirm-regenerate').click();
    await page.getByTestId('new-api-key').waitFor();
    key = (await page.getByTestId('new-api-key').textContent())!;
    expect(key).toMatch(KEY_FORMAT);
    expect(key).not.toBe(firstKey);
    expect(await page.evaluate(() => localStorage.getItem('tickhouse.api_key'))).toBe(key);
    expect((await apiAs(firstKey, '/v1/me')).status).toBe(401);
    expect((await apiAs(key, '/v1/me')).status).toBe(200);
    // Today's counter survives regeneration (docs/API.md §3).
    await expect.poll(() => page.getByTestId('usage-meter').getAttribute('value')).toBe('1');

    // Pasting the old key is refused with a readable message, and nothing is kept.
    await page.getByTestId('dismiss-key').click();
    await page.getByTestId('sign-out').click();
    await page.getByLabel('API key', { exact: true }).fill(firstKey);
    await page.getByTestId('signin-button').click();
    const error = page.getByTestId('api-error');
    await error.waitFor();
    expect(await error.getAttribute('data-status')).toBe('401');
    expect(await error.textContent()).toContain('The API key was not accepted');
    // Signing in is a first attempt, not an "again", and the form itself is the way forward.
    expect(await error.locator('strong').textContent()).toBe('Key not accepted');
    expect(await error.getByRole('button').count()).toBe(0);
    expect(await page.evaluate(() => localStorage.getItem('tickhouse.api_key'))).toBeNull();
    await page.getByLabel('API key', { exact: true }).fill(key);
    await page.getByTestId('signin-button').click();
    await expect.poll(() => page.getByTestId('plan-name').textContent()).toBe('free');
  });

  it('shows a 403 outside the history window with an upgrade link', async () => {
    await page.goto(`${base}/#/asset/${YES}`);
    await page.getByTestId('export-start').waitFor();
    await page.getByTestId('export-start').fill(utcText(data.start - 2 * 86_400_000));
    await page.getByTestId('export-download').click();
    const error = page.getByTestId('api-error');
    await error.waitFor();
    expect(await error.getAttribute('data-status')).toBe('403');
    expect(await error.textContent()).toContain('Your plan (free) only allows access to the last 0 day(s) of data.');
    expect(await error.getByRole('link', { name: 'See plans and upgrade' }).getAttribute('href')).toBe('#/account/plans');
  });

  it('subscribes in sandbox mode and shows the new plan once paid', async () => {
    await page.goto(`${base}/#/account`);
    const [invoicePage] = await Promise.all([context.waitForEvent('page'), page.getByTestId('subscribe-monthly').click()]);
    await invoicePage.waitForLoadState();
    expect(new URL(invoicePage.url()).pathname).toMatch(/^\/sandbox\/invoices\/.+/);
    await page.getByTestId('invoice-notice').waitFor();
    expect(await page.getByTestId('invoice-notice').textContent()).toContain('$59.90 (monthly)');
    await invoicePage.getByTestId('pay').click();
    await invoicePage.waitForLoadState();
    await invoicePage.close();
    await expect.poll(() => page.getByTestId('plan-name').textContent(), { timeout: 15_000 }).toBe('monthly');
    expect(await page.getByTestId('plan-status').textContent()).toBe('active');
    expect(await page.getByTestId('history-window').textContent()).toBe('Last 30 days (from 2026-05-25 00:00 UTC)');
    expect(await page.getByTestId('plan-expires').textContent()).toBe('2026-07-24 12:00:00 UTC (in 30d 0h)');
    expect(await page.getByTestId('invoice-status').allTextContents()).toEqual(['finished']);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-account.png'), fullPage: true });
  });

  it('finds the market, opens it and draws candles', async () => {
    await page.goto(`${base}/#/markets`);
    await page.getByRole('searchbox', { name: 'Search markets' }).fill('dashboard browser test');
    await expect.poll(() => page.getByTestId('page-info').textContent()).toBe('1–2 of 2');
    // YES has the most ticks, so it comes first (sorted by activity).
    await page.getByTestId('market-link').first().click();
    await expect.poll(() => page.getByTestId('asset-id').textContent()).toBe(YES);
    expect(await page.getByTestId('asset-title').textContent()).toBe(QUESTION);
    const chart = page.getByTestId('candles-chart');
    await expect.poll(async () => Number(await chart.getAttribute('data-count'))).toBeGreaterThan(0);
    await expect
      .poll(() =>
        chart.evaluate((el) =>
          [...el.querySelectorAll('canvas')].some((canvas) => {
            if (!canvas.width || !canvas.height) return false;
            const pixels = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
            for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) return true;
            return false;
          }),
        ),
      )
      .toBe(true);
    await page.getByRole('button', { name: '1m' }).click();
    await expect.poll(() => page.getByRole('button', { name: '1m' }).getAttribute('aria-pressed')).toBe('true');
    await expect.poll(async () => Number(await chart.getAttribute('data-count'))).toBeGreaterThan(0);
  });

  it('moves the time slider and shows the book at that time', async () => {
    const last = data.changes.at(-1)!;
    await expect.poll(() => page.getByTestId('book-datetime').textContent()).toBe(`${utcText(last.t)} UTC`);
    const target = data.changes[40];
    const slider = page.getByRole('slider', { name: 'Order book time (UTC)' });
    expect(Number(await slider.getAttribute('min'))).toBe(data.start);
    expect(Number(await slider.getAttribute('max'))).toBe(last.t);
    await slider.fill(String(target.t + 1));
    await expect.poll(() => page.getByTestId('book-datetime').textContent()).toBe(`${utcText(target.t)} UTC`);
    const ladder = page.getByTestId('book-ladder');
    expect(await ladder.locator('tr.bid td.price').first().textContent()).toBe(target.bid.toFixed(3));
    expect(await ladder.locator('tr.ask td.price').last().textContent()).toBe((target.bid + 0.02).toFixed(3));
    // "Replay from here": an hour from the book's time at 10×, as text (the key masked) and a Copy
    // button that copies it whole; nothing on the page links to ws://.
    const replay = new URL(base.replace(/^http/, 'ws'));
    replay.pathname = '/v1/replay/market';
    replay.search = new URLSearchParams({ from: String(target.t + 1), to: String(target.t + 1 + 3_600_000), speed: '10', key }).toString();
    await expect.poll(() => page.getByTestId('replay-url').inputValue()).toBe(replay.href.replace(key, `${key.slice(0, 12)}…${key.slice(-4)}`));
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await page.getByTestId('replay-copy').click();
    await expect.poll(() => page.getByTestId('replay-copy').textContent()).toBe('Copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(replay.href);
    expect(await page.locator('a[href^="ws"]').count()).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-asset.png'), fullPage: true });
  });

  it('computes an execution price at the chosen time', async () => {
    const target = data.changes[40];
    await page.getByTestId('exec-amount').fill('10');
    await page.getByTestId('exec-submit').click();
    await expect.poll(() => page.getByTestId('exec-average').textContent()).toBe((target.bid + 0.02).toFixed(3));
  });

  it('downloads a CSV export of the chosen range', async () => {
    await page.getByTestId('export-start').fill(utcText(data.start));
    await page.getByTestId('export-end').fill(utcText(data.end));
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-download').click()]);
    expect(download.suggestedFilename()).toBe(`ticks_${YES}_${data.start}_${data.end}.csv`);
    const csv = readFileSync((await download.path())!, 'utf8')
      .trimEnd()
      .split('\n');
    expect(csv[0]).toBe('timestamp,event_type,side,best_bid,best_ask,price,size');
    const ticks = await (await apiAs(key, `/v1/ticks?asset_id=${YES}&start=${data.start}&end=${data.end}&limit=100000`)).json();
    expect(csv.length - 1).toBe(ticks.meta.count);
    expect(ticks.meta.count).toBeGreaterThan(FRAMES);
  });

  it('explains a 429 with the reset time', async () => {
    // A fresh free account spends its 100 requests; the page then says when the counter resets.
    const res = await fetch(`${base}/v1/register`, { method: 'POST' });
    const spent = (await res.json()).data.api_key as string;
    for (let i = 0; i < 100; i++) await apiAs(spent, `/v1/orderbook?asset_id=${YES}&limit=1`);
    await page.evaluate((k) => localStorage.setItem('tickhouse.api_key', k), spent);
    await page.goto(`${base}/#/account`);
    await page.goto(`${base}/#/asset/${YES}`);
    const error = page.getByTestId('api-error').first();
    await error.waitFor();
    expect(await error.getAttribute('data-status')).toBe('429');
    expect(await error.textContent()).toContain('Daily request limit (100) exceeded. The counter resets at 2026-06-25 00:00:00 UTC (in 12h 0m).');
  });

  it('fits a phone-width screen', async () => {
    await page.evaluate((k) => localStorage.setItem('tickhouse.api_key', k), key);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/#/account`);
    await page.getByTestId('plan-name').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.goto(`${base}/#/asset/${YES}`);
    await page.getByTestId('book-datetime').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  });

  it('loaded nothing from other origins and threw no script error', () => {
    expect(offOrigin).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
