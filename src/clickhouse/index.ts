import type { Config } from '../config.js';
import { EmbeddedEngine } from './embedded.js';
import type { Engine } from './engine.js';
import { ServerEngine } from './server.js';

export type { Engine } from './engine.js';

/** The server backend when CLICKHOUSE_URL is set, the embedded chDB engine on DATA_DIR otherwise. */
export function createEngine(
  config: Pick<Config, 'CLICKHOUSE_URL' | 'CLICKHOUSE_USER' | 'CLICKHOUSE_PASSWORD' | 'CLICKHOUSE_DATABASE' | 'ENGINE_SESSIONS' | 'dataDir'>,
): Engine {
  if (config.CLICKHOUSE_URL) {
    return new ServerEngine({
      url: config.CLICKHOUSE_URL,
      username: config.CLICKHOUSE_USER,
      password: config.CLICKHOUSE_PASSWORD,
      database: config.CLICKHOUSE_DATABASE,
    });
  }
  return EmbeddedEngine.open(config.dataDir, config.ENGINE_SESSIONS);
}
