import { DataDirLockedError } from './clickhouse/errors.js';
import { ConfigError } from './config.js';
import { errorText } from './log.js';

/**
 * Runs a CLI body; known start-up failures (bad configuration, a locked DATA_DIR) end with one
 * clear line on stderr and exit code 1, anything else with its stack. Used by the recorder
 * (src/record.ts) and the CLIs in scripts/.
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
