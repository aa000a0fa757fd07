import type { z } from 'zod';
import type { HistoryWindow } from '../auth/history-window.js';
import type { BookReader } from '../book-history/port.js';
import type { AppDeps } from '../deps.js';

/** What a tool reads with: the app's engine, clock and config, and the one BookReader of the app. */
export interface ToolDeps extends Pick<AppDeps, 'engine' | 'clock' | 'config'> {
  books: BookReader;
}

/** One call: the caller's history window (its key's effective plan, now) and the signal that cancels its reads. */
export interface ToolCall {
  window: HistoryWindow;
  signal: AbortSignal;
}

/**
 * A tool (docs/MCP.md §3): a zod input schema, the zod schema of its answer (advertised as the tool's
 * `outputSchema`; clients check `structuredContent` against it), and `run`, which answers or throws an
 * ApiError (docs/API.md §6). Every answer is bounded; `description` states the bound.
 */
export interface McpTool<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  run(args: z.output<I>, deps: ToolDeps, call: ToolCall): Promise<z.output<O>>;
}

/** Keeps each tool's argument and answer types tied to its schemas. */
export const defineTool = <I extends z.ZodObject, O extends z.ZodObject>(tool: McpTool<I, O>): McpTool => tool as unknown as McpTool;
