import type { Readable, Writable } from 'node:stream';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * `npm run mcp` (docs/MCP.md §5): MCP over stdio for desktop hosts, as a thin relay to a running
 * tickhouse's `POST /mcp`. Every message from the host is POSTed with the API key; every answer goes
 * back on stdout. The tools, the counting and the window stay in the service, so this process opens no
 * engine and no account store: it runs next to `npm start` on the same DATA_DIR (the embedded engine
 * allows one process per directory), and against any tickhouse the key belongs to. Nothing but protocol
 * is written to stdout; what goes wrong is said on stderr, where hosts show a server's log.
 */
export interface RelayOptions {
  /** The service's base URL (its `/mcp` is appended). */
  url: string;
  key: string;
  stdin?: Readable;
  stdout?: Writable;
  /** Where the relay reports (default: stderr). */
  report?: (line: string) => void;
}

/** Why the relay cannot start, in words for the host's log. */
export class RelayStartError extends Error {}

/**
 * Checks the key against the service (GET /v1/me, never counted), then relays until the host closes
 * stdin. Resolves when the relay has stopped.
 */
export async function runStdioRelay(options: RelayOptions): Promise<void> {
  const report = options.report ?? ((line: string) => process.stderr.write(`tickhouse mcp: ${line}\n`));
  await checkKey(options.url, options.key);
  const up = new StreamableHTTPClientTransport(new URL('/mcp', options.url), { requestInit: { headers: { Authorization: `Bearer ${options.key}` } } });
  const stdin = options.stdin ?? process.stdin;
  const down = new StdioServerTransport(stdin, options.stdout ?? process.stdout);
  // The service answers initialize with the protocol version; later POSTs must name it (MCP-Protocol-Version).
  const initializing = new Set<string | number>();

  down.onmessage = (message) => {
    if ('method' in message && message.method === 'initialize' && 'id' in message) initializing.add(message.id);
    // The transport reports the failure (onerror below); a request must also get an answer, or the host waits for it forever.
    up.send(message).catch((err: Error) => {
      if ('method' in message && 'id' in message) {
        void down.send({ jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InternalError, message: `tickhouse at ${options.url}: ${err.message}` } });
      }
    });
  };
  up.onmessage = (message: JSONRPCMessage) => {
    if ('result' in message && initializing.delete(message.id)) {
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === 'string') up.setProtocolVersion(version);
    }
    void down.send(message);
  };
  up.onerror = (err) => report(`the service: ${err.message}`);
  down.onerror = (err) => report(`bad message from the host: ${err.message}`);

  await up.start();
  await down.start();
  report(`relaying MCP on stdio to ${new URL('/mcp', options.url)}`);
  await new Promise<void>((resolve) => stdin.once('end', () => resolve()));
  await down.close();
  await up.close();
}

async function checkKey(url: string, key: string): Promise<void> {
  let res: Response;
  try {
    res = await fetch(new URL('/v1/me', url), { headers: { Authorization: `Bearer ${key}` } });
  } catch (err) {
    throw new RelayStartError(
      `no tickhouse answers at ${url} (${(err as Error).cause ?? (err as Error).message}): start it with npm start, or set TICKHOUSE_URL to where it runs`,
    );
  }
  await res.body?.cancel();
  if (res.status === 401) throw new RelayStartError(`TICKHOUSE_API_KEY is not a valid key of the tickhouse at ${url}`);
  if (!res.ok) throw new RelayStartError(`the tickhouse at ${url} answered ${res.status} to GET /v1/me`);
}
