import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { describe } from 'vitest';

/** Debian's chromium, driven by playwright-core: the browser suites' one way to start it. */
export const CHROMIUM = '/usr/bin/chromium';
/** Where the browser suites leave their screenshots (gitignored). */
export const ARTIFACTS = join(process.cwd(), 'test-artifacts');

const haveBrowser = existsSync(CHROMIUM);
const requireBrowser = process.env.TEST_REQUIRE_BROWSER === '1';

/**
 * `describe` for a suite that needs the browser. Without one it is skipped, loudly, unless
 * TEST_REQUIRE_BROWSER=1 says a missing browser is a failure (launchBrowser then throws).
 */
export function describeInBrowser(file: string): typeof describe | typeof describe.skip {
  if (haveBrowser || requireBrowser) return describe;
  console.warn(
    `\n${'!'.repeat(78)}\n!! SKIPPED ${file}: ${CHROMIUM} is not installed.\n!! Install Debian's chromium (apt-get install chromium) or set ` +
      `TEST_REQUIRE_BROWSER=1 to make this a failure.\n${'!'.repeat(78)}\n`,
  );
  return describe.skip;
}

/**
 * A headless Chromium with its profile in `profile` (a folder the suite removes after closing the
 * context), nothing of its own going to the network; ARTIFACTS exists for screenshots.
 */
export async function launchBrowser(
  profile: string,
  options: { viewport: { width: number; height: number }; acceptDownloads?: boolean },
): Promise<BrowserContext> {
  if (!haveBrowser) throw new Error(`TEST_REQUIRE_BROWSER=1 but ${CHROMIUM} is missing`);
  mkdirSync(ARTIFACTS, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    ...options,
  });
  context.setDefaultTimeout(10_000);
  return context;
}
