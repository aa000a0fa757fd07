import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // chDB allows one data directory per process: every test file runs in its own process.
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll waits for what a page shows; its default 1 s is a wall-clock bound a loaded 2-core
    // machine can miss. The time-out only says when to call it a failure (issue 25).
    expect: { poll: { timeout: 15_000 } },
  },
});
