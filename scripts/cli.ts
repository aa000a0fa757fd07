import { DataDirLockedError } from '../src/clickhouse/errors.js';
import { ConfigError } from '../src/config.js';
import { errorText } from '../src/log.js';

/**
 * Runs a CLI body; known start-up failures (bad configuration, a locked DATA_DIR) end with one
 * clear line on stderr and exit code 1, anything else with its stack.
 */
export async function runCli(body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (err) {
    if (err instanceof ConfigError || err instanceof DataDirLockedError) {
      process.stderr.write(`tickhouse: ${err.message}\n`);
    } else {
      process.stderr.write(`tickhouse: ${errorText(err, 'stack')}\n`);
    }
    process.exit(1);
  }
}
