import { RelayStartError, runStdioRelay } from '../src/mcp/stdio-relay.js';

/**
 * `npm run mcp` (docs/MCP.md §5): MCP on stdio for desktop hosts, relayed to a running tickhouse.
 * TICKHOUSE_API_KEY is the key; TICKHOUSE_URL the service (default: `npm start` on this machine, PORT
 * or 8080). stdout carries the protocol only: run it as `npm run -s mcp` (npm's own banner goes to stdout).
 */
const key = process.env.TICKHOUSE_API_KEY ?? '';
const url = process.env.TICKHOUSE_URL || `http://127.0.0.1:${process.env.PORT || 8080}`;

if (!key) {
  process.stderr.write('tickhouse mcp: set TICKHOUSE_API_KEY to your API key (npm start prints a local one; POST /v1/register makes one)\n');
  process.exit(1);
}
try {
  await runStdioRelay({ url, key });
} catch (err) {
  process.stderr.write(`tickhouse mcp: ${err instanceof RelayStartError ? err.message : ((err as Error).stack ?? String(err))}\n`);
  process.exit(1);
}
