import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, type CallToolResult, ErrorCode, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { z } from 'zod';
import type { HistoryWindow } from '../auth/history-window.js';
import { ApiError } from '../http/errors.js';
import { apiErrorOf } from '../http/render-error.js';
import { errorText, log } from '../log.js';
import { parseArguments } from './inputs.js';
import type { ToolDeps } from './tool.js';
import { TOOLS } from './tools/index.js';

/**
 * The MCP server of one caller (docs/MCP.md): the SDK's low-level Server with two handlers. tools/list
 * answers the static list; tools/call counts one data request, checks the arguments, runs the tool and
 * answers `structuredContent` (and the same JSON as text, for hosts that show only `content`), or a tool
 * error carrying the REST API's error body. The SDK's high-level McpServer is not used: it validates
 * arguments itself, before anything can count the call, and words a bad parameter its own way.
 */

export interface McpCaller {
  window: HistoryWindow;
  /** Counts one data request (docs/API.md §2); throws the 429 ApiError over the daily limit. */
  count(): Promise<void>;
  /** Cancels the call's engine reads (the HTTP request went away). */
  signal: AbortSignal;
  requestId: string;
}

export const SERVER_INFO = { name: 'tickhouse', title: 'tickhouse: Polymarket market data at any millisecond', version: '1.0.0' };

const INSTRUCTIONS =
  'Historical Polymarket data per outcome token (asset_id): order books at any millisecond, prices, market-order fills, candles, tick summaries and ' +
  'recording coverage. Find asset_ids with search_markets. Times are Unix ms (UTC) or ISO 8601 text; ranges include both ends. Every tool call counts ' +
  'as one request against the API key’s daily limit, and the plan’s history window bounds the instants it may read. Answers are bounded; for whole ' +
  'ranges use get_export_link.';

/** tools/list's answer, the same for every caller: computed once. */
const TOOL_LIST: Tool[] = TOOLS.map((tool) => ({
  name: tool.name,
  title: tool.title,
  description: tool.description,
  inputSchema: z.toJSONSchema(tool.input, { target: 'draft-7', io: 'input' }) as Tool['inputSchema'],
  outputSchema: z.toJSONSchema(tool.output, { target: 'draft-7', io: 'output' }) as Tool['outputSchema'],
  annotations: { title: tool.title, readOnlyHint: true, idempotentHint: true, openWorldHint: false },
}));

const BY_NAME = new Map(TOOLS.map((tool) => [tool.name, tool]));

/**
 * One JSON Schema validator for every request's server. The SDK makes a new Ajv (its formats and meta
 * schemas compiled) for each Server it is not given one: 5–50 ms of the event loop per MCP request, as
 * the route builds a server per request (the mixed load's MCP agents held /healthz behind it, issue
 * 35). Our server asks it nothing (no elicitation); it holds no per-request state.
 */
const SCHEMA_VALIDATOR = new AjvJsonSchemaValidator();

export function buildMcpServer(deps: ToolDeps, caller: McpCaller): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: SCHEMA_VALIDATOR });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOL_LIST }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const tool = BY_NAME.get(request.params.name);
    // Not a call of a tool: a protocol error, and nothing counted.
    if (!tool) throw protocolError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    try {
      await caller.count();
      const answer = await tool.run(parseArguments(tool.input, request.params.arguments), deps, { window: caller.window, signal: caller.signal });
      return { content: [{ type: 'text', text: JSON.stringify(answer) }], structuredContent: answer };
    } catch (err) {
      return toolError(err, caller.requestId);
    }
  });
  return server;
}

/**
 * A JSON-RPC error the SDK sends as it is: an McpError would put its own "MCP error -32602: " before
 * the message on the wire, and the client adds its own again.
 */
function protocolError(code: ErrorCode, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * A tool error (`isError`) with the REST API's error body as its text (docs/API.md §6: code, message
 * and the code's extra members) and, for programs, the code and the status the REST API would answer
 * in `_meta`. No `structuredContent`: a client checks it against the tool's outputSchema even on errors.
 */
export function toolError(err: unknown, requestId: string): CallToolResult {
  let known = err instanceof Error ? apiErrorOf(err) : null;
  if (!known) {
    log.error('unhandled error in an MCP tool', { request_id: requestId, error: errorText(err, 'stack') });
    known = new ApiError('internal_error', 'Internal error; quote request_id when reporting it.', { request_id: requestId });
  }
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(known.body()) }],
    _meta: { 'tickhouse/error': known.code, 'tickhouse/status': known.status },
  };
}
