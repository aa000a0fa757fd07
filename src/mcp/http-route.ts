import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { Context } from 'hono';
import { windowOf } from '../auth/history-window.js';
import { countDataRequest } from '../auth/middleware.js';
import type { BookReader } from '../book-history/port.js';
import type { AppDeps } from '../deps.js';
import type { AppEnv } from '../http/context.js';
import { ApiError, invalidParameter } from '../http/errors.js';
import { errorResponses } from '../http/openapi.js';
import { log } from '../log.js';
import { buildMcpServer, type McpCaller } from './server.js';

/**
 * `POST /mcp`: the Model Context Protocol over streamable HTTP (docs/MCP.md §1), stateless. Each
 * request gets a fresh server and transport of the official SDK, bound to the caller its API key
 * signed in (requireAuth runs before, app.ts); each tool call counts one data request and the answer
 * carries that count's X-RateLimit-* headers. Answers are JSON, never a stream: no tool sends progress,
 * so a stream would only add framing. There is no session, so no GET stream and no DELETE: 405.
 */
export const MCP_PATH = '/mcp';

const JsonRpcMessage = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number().int()]).optional(),
    method: z.string().optional(),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .catchall(z.unknown())
  .openapi('McpMessage', { description: 'One JSON-RPC 2.0 message of the MCP protocol (a request, a notification or a response); no batches' });

const mcpRoute = createRoute({
  method: 'post',
  path: MCP_PATH,
  operationId: 'mcp',
  tags: ['mcp'],
  summary: 'Model Context Protocol (streamable HTTP, stateless): tools over the same data, keys and limits',
  description:
    'Send `Accept: application/json, text/event-stream` and `Content-Type: application/json` (a missing Accept is taken as that). Requests ' +
    '(initialize, tools/list, tools/call, ping) are answered with one JSON-RPC message; notifications with 202. Each tools/call counts as one data ' +
    'request (docs/API.md §2) and its answer carries X-RateLimit-*; a tool error (window, limit, bad parameter, no book) is a result with `isError` ' +
    'and the error body of docs/API.md §6 as its text (docs/MCP.md §4). GET and DELETE: 405 (no sessions).',
  security: [{ bearer: [] }],
  request: { body: { required: true, content: { 'application/json': { schema: JsonRpcMessage } } } },
  responses: {
    200: {
      description: 'The JSON-RPC response (X-RateLimit-* when a tool call was counted)',
      content: {
        'application/json': {
          schema: z
            .object({ jsonrpc: z.literal('2.0') })
            .catchall(z.unknown())
            .openapi('McpResponse'),
        },
      },
    },
    202: { description: 'A notification or a response was accepted; no body' },
    ...errorResponses(400, 401, 413, 503),
  },
});

const NOT_ALLOWED = 'The MCP endpoint takes POST only: it keeps no session, so there is no GET stream to open and none to DELETE.';

export function registerMcpRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps, books: BookReader): void {
  const tools = { engine: deps.engine, clock: deps.clock, config: deps.config, books };

  app.openapi(mcpRoute, async (c) => {
    const version = c.req.header('mcp-protocol-version');
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      throw invalidParameter('MCP-Protocol-Version', `MCP-Protocol-Version must be one of ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`);
    }
    // The headers of this request's count, once its tool call counted.
    const counted: { headers?: Record<string, string> } = {};
    const caller: McpCaller = {
      window: windowOf(c),
      signal: c.req.raw.signal,
      requestId: c.get('requestId'),
      async count() {
        try {
          counted.headers = await countDataRequest(deps, c.get('account'), c.get('effective'));
        } catch (err) {
          // Refused (429): the answer still says where the count stands, and when it resets.
          if (err instanceof ApiError) counted.headers = err.headers;
          throw err;
        }
      },
    };
    const message = c.req.valid('json');
    const malformed = malformedToolCall(message);
    if (malformed) return c.json(malformed, 200) as never;
    const server = buildMcpServer(tools, caller);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    transport.onerror = (err) => log.debug('mcp transport', { request_id: caller.requestId, error: err.message });
    await server.connect(transport);
    try {
      const res = await transport.handleRequest(mcpRequest(c), { parsedBody: message });
      if (res.status >= 400) throw await transportError(res, caller.requestId);
      const headers = new Headers(res.headers);
      for (const [name, value] of Object.entries(counted.headers ?? {})) headers.set(name, value);
      return new Response(res.body, { status: res.status, headers }) as never;
    } finally {
      await server.close();
    }
  });

  app.all(MCP_PATH, () => {
    throw new ApiError('method_not_allowed', NOT_ALLOWED, {}, { Allow: 'POST' });
  });
}

/**
 * A tools/call whose `name` is not text or whose `arguments` are not an object (an array, a string):
 * the SDK would refuse it as an internal error (-32603) with its validator's dump as the message. It
 * is a call with invalid params (JSON-RPC -32602), named as the REST API names a bad parameter
 * (docs/MCP.md §4); nothing ran, so nothing is counted.
 */
function malformedToolCall(message: z.infer<typeof JsonRpcMessage>) {
  if (message.method !== 'tools/call' || message.id === undefined) return null;
  const { name, arguments: args } = message.params ?? {};
  const param =
    typeof name !== 'string' ? 'name' : args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args)) ? 'arguments' : null;
  if (!param) return null;
  const why =
    param === 'name'
      ? 'name must be the name of a tool, as tools/list gives it'
      : 'arguments must be an object of the tool’s arguments by name, e.g. {"asset_id": "…"}';
  return { jsonrpc: '2.0' as const, id: message.id, error: { code: -32602, message: `Invalid params: ${why}`, data: { error: 'invalid_parameter', param } } };
}

/**
 * The request as the transport reads it: the body is already parsed (the route validated it), and
 * Accept always allows both types the protocol names, since every answer here is JSON anyway (a
 * client that sends neither, curl by default, is served rather than refused with 406).
 */
function mcpRequest(c: Context<AppEnv>): Request {
  const headers = new Headers(c.req.raw.headers);
  headers.set('accept', 'application/json, text/event-stream');
  return new Request(c.req.url, { method: 'POST', headers });
}

/** A refusal of the transport (a body that is no JSON-RPC message) in the API's error shape. */
async function transportError(res: Response, requestId: string): Promise<ApiError> {
  const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
  const message = body?.error?.message ?? `MCP transport answered ${res.status}`;
  if (res.status === 400) return invalidParameter('body', message);
  log.error('unexpected MCP transport answer', { request_id: requestId, status: res.status, message });
  return new ApiError('internal_error', 'Internal error; quote request_id when reporting it.', { request_id: requestId });
}
