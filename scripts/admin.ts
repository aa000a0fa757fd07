import { AccountStoreLockedError } from '../src/accounts/embedded-store.js';
import { AccountNotFoundError, StoreUnavailableError } from '../src/accounts/errors.js';
import { openAccountStore } from '../src/accounts/index.js';
import type { AccountStore } from '../src/accounts/store.js';
import { runAdminCommand, UsageError } from '../src/admin/commands.js';
import { runCli } from '../src/cli.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { setLogLevel } from '../src/log.js';

/**
 * `npm run admin -- <command>`: account operations for operators, on Redis (REDIS_URL) or the
 * embedded store under DATA_DIR (stop the service first: that store belongs to one process).
 */
await runCli(async () => {
  const config = loadConfig();
  setLogLevel(config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL);
  let accounts: AccountStore;
  try {
    accounts = await openAccountStore(config);
  } catch (err) {
    if (!(err instanceof AccountStoreLockedError)) throw err;
    process.stderr.write(`tickhouse admin: ${err.message}\n`);
    process.exit(1);
  }
  try {
    const result = await runAdminCommand(process.argv.slice(2), { accounts, clock: systemClock, apiKeyPrefix: config.API_KEY_PREFIX });
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } catch (err) {
    if (!(err instanceof UsageError || err instanceof StoreUnavailableError || err instanceof AccountNotFoundError)) throw err;
    process.stderr.write(`tickhouse admin: ${err.message}\n`);
    process.exitCode = 1;
  } finally {
    await accounts.close();
  }
});
