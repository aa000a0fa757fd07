import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from './support/free-port.js';
import { answerOf, type McpService, startMcpService } from './support/mcp-service.js';

/**
 * `npm run mcp` (docs/MCP.md §5): the SDK's own Client over stdio, through the relay to the running
 * service's POST /mcp. The answers are the service's (compared with `/v1` for the book, price, candles
 * and coverage), each call counts once, stdout carries nothing but protocol, and a relay that cannot
 * work says why on stderr and exits 1.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NOW = Date.UTC(2026, 5, 24, 15, 30);

let s: McpService;
let asset: string;

beforeAll(async () => {
  s = await startMcpService(NOW, { ticks: 5000 });
  asset = s.top.asset_id;
}, 180_000);

afterAll(async () => {
  await s?.close();
});

const env = (extra: Record<string, string>) => ({ ...(process.env as Record<string, string>), TICKHOUSE_URL: s.origin, ...extra });

async function stdioClient(key: string): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', 'scripts/mcp.ts'],
    cwd: ROOT,
    env: env({ TICKHOUSE_API_KEY: key }),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => (stderr += d));
  const client = new Client({ name: 'tickhouse-stdio-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

it('the SDK Client over stdio lists the tools and gets the service’s answers, each call counted once', async () => {
  const key = await s.d.keyFor('monthly');
  const { client, stderr } = await stdioClient(key);
  const http = await s.client(key);
  expect((await client.listTools()).tools).toEqual((await http.listTools()).tools);
  expect(stderr()).toContain(`tickhouse mcp: relaying MCP on stdio to ${s.origin}/mcp`);

  const { first, last } = s.top;
  const t = Math.floor((first + last) / 2);
  const viaStdio = async (name: string, args: Record<string, unknown>) => answerOf((await client.callTool({ name, arguments: args })) as never);
  const v1 = async (path: string) => (await s.v1(path, key)).body;
  expect(await viaStdio('get_order_book', { asset_id: asset, timestamp: t, depth: 5 })).toEqual(
    (await v1(`/v1/orderbook?asset_id=${asset}&timestamp=${t}&limit=5`)).data,
  );
  expect(await viaStdio('get_price', { asset_id: asset, timestamp: t })).toEqual((await v1(`/v1/price?asset_id=${asset}&timestamp=${t}`)).data);
  const candles = await v1(`/v1/ohlcv?asset_id=${asset}&resolution=15m&start=${first}&limit=50`);
  expect(await viaStdio('get_candles', { asset_id: asset, resolution: '15m', start: first, limit: 50 })).toEqual({
    candles: candles.data,
    count: candles.meta.count,
    resolution: '15m',
  });
  expect(await viaStdio('get_coverage', { asset_id: asset, start: first, end: last })).toEqual({
    ...(await v1(`/v1/coverage?asset_id=${asset}&start=${first}&end=${last}`)).data,
    omitted: { captured: 0, gaps: 0, reconnects: 0 },
  });
  // The other tools answer over stdio exactly as over HTTP.
  const others: [string, Record<string, unknown>][] = [
    ['search_markets', { search: 'fed' }],
    ['get_market', { asset_id: asset, timestamp: t }],
    ['get_execution_price', { asset_id: asset, side: 'SELL', amount: 100, timestamp: t }],
    ['get_tick_summary', { asset_id: asset, start: first, end: last }],
    ['get_export_link', { dataset: 'book_snapshots', asset_id: asset, start: first, end: last }],
  ];
  for (const [name, args] of others) {
    expect(await viaStdio(name, args), name).toEqual(answerOf((await http.callTool({ name, arguments: args })) as never));
  }
  // After initialize, every POST names the negotiated protocol version, as the transport requires of clients: the relay's 9 calls too.
  const calls = s.mcpRequests.filter((r) => r.headers.authorization === `Bearer ${key}` && r.rpc === 'tools/call');
  expect(calls.map((r) => r.headers['mcp-protocol-version'])).toEqual(Array(14).fill('2025-11-25'));
  // 4 REST data requests, 4 + 5 calls over stdio, 5 over HTTP.
  expect((await s.v1('/v1/me', key)).body.data.requests_today).toBe(18);
  await http.close();
  await client.close();
});

it('a request the service refuses (the key was regenerated meanwhile) gets a JSON-RPC error, never silence', async () => {
  const key = await s.d.keyFor('daily');
  const { client, stderr } = await stdioClient(key);
  const regenerated = await fetch(`${s.origin}/v1/keys/regenerate`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
  expect(regenerated.status).toBe(200);
  const err = await client.callTool({ name: 'get_price', arguments: { asset_id: asset } }).catch((e) => e);
  expect(err).toBeInstanceOf(McpError);
  expect(err.code).toBe(-32603);
  expect(err.message).toContain(`tickhouse at ${s.origin}: Streamable HTTP error: Error POSTing to endpoint: {"detail":{"error":"invalid_api_key"`);
  expect(stderr()).toContain('tickhouse mcp: the service: Streamable HTTP error: Error POSTing to endpoint: {"detail":{"error":"invalid_api_key"');
  await client.close();
});

/** `npm run -s mcp` as a desktop host starts it, fed raw lines; its output once stdin closes. */
function runNpm(extraEnv: Record<string, string>, lines: string[], linesToWaitFor: number) {
  const child = spawn('npm', ['run', '-s', '--prefix', ROOT, 'mcp'], { cwd: '/', env: env(extraEnv), stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.stdout.on('data', (d) => {
    stdout += d;
    if (stdout.split('\n').length > linesToWaitFor) child.stdin.end();
  });
  for (const line of lines) child.stdin.write(`${line}\n`);
  if (linesToWaitFor === 0) child.stdin.end();
  return exited.then((code) => ({ code, stdout, stderr }));
}

it('npm run -s mcp writes nothing but protocol on stdout, and exits 0 when the host closes stdin', async () => {
  const key = await s.d.keyFor('monthly');
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'host', version: '1' } },
  };
  const out = await runNpm(
    { TICKHOUSE_API_KEY: key },
    [
      JSON.stringify(initialize),
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_price', arguments: { asset_id: asset } } }),
    ],
    2,
  );
  expect(out.code, out.stderr).toBe(0);
  const messages = out.stdout
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line));
  expect(messages.map((m) => [m.jsonrpc, m.id])).toEqual([
    ['2.0', 1],
    ['2.0', 2],
  ]);
  expect(messages[1].result.structuredContent).toEqual((await s.v1(`/v1/price?asset_id=${asset}`, key)).body.data);
});

it('without a key, with a wrong key, or with no service there, it says why on stderr and exits 1', async () => {
  expect(await runNpm({ TICKHOUSE_API_KEY: '' }, [], 0)).toEqual({
    code: 1,
    stdout: '',
    stderr: 'tickhouse mcp: set TICKHOUSE_API_KEY to your API key (npm start prints a local one; POST /v1/register makes one)\n',
  });
  expect(await runNpm({ TICKHOUSE_API_KEY: 'th_live_not_a_key_of_this_service_aaaaaaaaaaaaaaaaa' }, [], 0)).toEqual({
    code: 1,
    stdout: '',
    stderr: `tickhouse mcp: TICKHOUSE_API_KEY is not a valid key of the tickhouse at ${s.origin}\n`,
  });
  const closed = `http://127.0.0.1:${await freePort()}`;
  const nobody = await runNpm({ TICKHOUSE_API_KEY: s.d.key, TICKHOUSE_URL: closed }, [], 0);
  expect([nobody.code, nobody.stdout]).toEqual([1, '']);
  expect(nobody.stderr).toMatch(
    new RegExp(`^tickhouse mcp: no tickhouse answers at ${closed} \\(.*ECONNREFUSED.*\\): start it with npm start, or set TICKHOUSE_URL to where it runs\n$`),
  );
});
