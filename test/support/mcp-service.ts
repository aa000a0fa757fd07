import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { seedDemo } from '../../src/demo/seed.js';
import { replayLines } from '../../src/ingest/frame-files.js';
import { capture } from './coverage-lines.js';
import { type DataApp, startDataApp } from './data-app.js';

/**
 * The whole app on a real port for the MCP tests (docs/MCP.md): the demo dataset (markets with
 * metadata, books, trades) ending at `now`, plus capture records for the most active asset (a
 * recorder run with `reconnects` reconnects, so coverage has captured time, gaps and reconnects).
 * Clients are the SDK's own `Client` over streamable HTTP, with the headers of each HTTP answer kept.
 */
export interface McpService {
  d: DataApp;
  origin: string;
  /** The most active asset (the one with capture records) and its first and last tick times. */
  top: { asset_id: string; market: string; first: number; last: number };
  /** Every HTTP request to /mcp so far: its method, headers and JSON-RPC method (the relay's requests, as the service saw them). */
  mcpRequests: { method: string; headers: Record<string, string>; rpc?: string }[];
  /** A `/v1` answer with `key` (default: the unlimited one): status, headers and parsed body. */
  v1(path: string, key?: string): Promise<{ status: number; headers: Headers; body: any }>;
  /** A connected SDK client with `key`; `answers` gets each HTTP answer of the MCP endpoint. */
  client(key?: string, answers?: (res: Response) => void): Promise<Client>;
  close(): Promise<void>;
}

export async function startMcpService(now: number, options: { ticks?: number; reconnects?: number } = {}): Promise<McpService> {
  const d = await startDataApp(now);
  await seedDemo(d.te.engine, { ticks: options.ticks ?? 20_000, endMs: now, days: 3, markets: 4 });
  const mcpRequests: McpService['mcpRequests'] = [];
  const server: ServerType = serve({
    fetch: async (request, env) => {
      if (new URL(request.url).pathname === '/mcp') {
        const body = request.method === 'POST' ? await request.clone().text() : '';
        mcpRequests.push({ method: request.method, headers: Object.fromEntries(request.headers), rpc: rpcMethod(body) });
      }
      return d.app.fetch(request, env);
    },
    port: 0,
    hostname: '127.0.0.1',
  });
  await new Promise((resolve) => server.once('listening', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const v1 = async (path: string, key = d.key) => {
    const res = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${key}` } });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };
  const [entry] = (await v1('/v1/markets?limit=1')).body.data;
  const first = Date.parse(`${entry.first_seen.replace(' ', 'T')}Z`);
  const last = Date.parse(`${entry.last_seen.replace(' ', 'T')}Z`);
  await replayLines(d.te.engine, captureRun(entry.asset_id, first, last, options.reconnects ?? 3), { sourceId: 'mcp-capture' });

  return {
    d,
    origin,
    top: { asset_id: entry.asset_id, market: entry.market, first, last },
    mcpRequests,
    v1,
    async client(key = d.key, answers) {
      const client = new Client({ name: 'tickhouse-test', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL('/mcp', origin), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
        fetch: async (url, init) => {
          const res = await fetch(url, init);
          answers?.(res);
          return res;
        },
      });
      await client.connect(transport);
      return client;
    },
    async close() {
      await new Promise((resolve) => server.close(resolve));
      await d.close();
    },
  };
}

/**
 * One recorder run over the asset's data: subscribed from 1 s before its first tick, then
 * `reconnects` times a 2 s disconnect spread over its history, stopped after its last tick.
 */
function captureRun(asset: string, first: number, last: number, reconnects: number): string[] {
  const run = 'mcp-run';
  const lines = [capture('start', first - 2000, run, 0), capture('subscribe', first - 1500, run, 1, [asset]), capture('open', first - 1000, run, 1, [asset])];
  const step = Math.floor((last - first) / (reconnects + 1));
  for (let i = 1; i <= reconnects; i++) {
    const at = first + i * step;
    lines.push(capture('close', at, run, 1, [asset]), capture('open', at + 2000, run, 1, [asset]));
  }
  lines.push(capture('stop', last + 1000, run, 0));
  return lines;
}

/** The JSON-RPC method of a request body, if it is one. */
function rpcMethod(body: string): string | undefined {
  try {
    return JSON.parse(body)?.method;
  } catch {
    return undefined;
  }
}

/** A tool answer's JSON: its structuredContent, checked to be exactly its text content. */
export function answerOf(result: CallToolResult): any {
  if (result.isError) throw new Error(`tool error: ${JSON.stringify(result.content)}`);
  const [content] = result.content;
  if (content?.type !== 'text' || JSON.stringify(result.structuredContent) !== content.text) {
    throw new Error(`the text content is not the structuredContent: ${JSON.stringify(result)}`);
  }
  return result.structuredContent;
}

/** A tool error's parsed body (the REST API's error body), with its `_meta`. */
export function errorOf(result: CallToolResult): { body: any; meta: unknown } {
  if (!result.isError) throw new Error(`not a tool error: ${JSON.stringify(result)}`);
  const [content] = result.content;
  if (content?.type !== 'text') throw new Error(`tool error without text: ${JSON.stringify(result)}`);
  return { body: JSON.parse(content.text), meta: result._meta };
}
