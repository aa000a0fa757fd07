import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { tickSummary } from '../../src/queries/tick-summary.js';
import type { BenchContext, BenchRow } from './types.js';

/**
 * The MCP tools (docs/MCP.md §3) on the bench dataset, through the SDK's Client over streamable HTTP:
 * for each tool the largest answer among argument sets chosen to make it large (deepest book, most
 * candles, longest coverage, the widest search), in bytes of its text content (what a host puts in
 * the model's context) and of the whole HTTP body (JSON-RPC, with structuredContent beside the text),
 * with the time of that call. The tick summary of the largest asset's whole history is also timed
 * against the same read on the raw engine.
 */
const DAY = 86_400_000;

export async function benchMcp(ctx: BenchContext): Promise<BenchRow[]> {
  const a = ctx.dataset.largest;
  const mid = Math.floor((a.start + a.end) / 2);
  const instants = [a.end, mid, a.start + DAY, undefined];
  const at = (t: number | undefined) => (t === undefined ? {} : { timestamp: t });
  const cases: Record<string, Record<string, unknown>[]> = {
    search_markets: [{ limit: 50 }, { search: '0x', limit: 50 }],
    get_market: instants.map((t) => ({ asset_id: a.asset_id, ...at(t) })),
    get_order_book: instants.map((t) => ({ asset_id: a.asset_id, depth: 100, ...at(t) })),
    get_price: instants.map((t) => ({ asset_id: a.asset_id, ...at(t) })),
    get_execution_price: instants.flatMap((t) => ['BUY', 'SELL'].map((side) => ({ asset_id: a.asset_id, side, amount: 1e12, ...at(t) }))),
    get_candles: ['1m', '1h', '1d'].map((resolution) => ({ asset_id: a.asset_id, resolution, start: a.start, limit: 500 })),
    get_tick_summary: [{ asset_id: a.asset_id, start: a.start, end: a.end }],
    get_coverage: [{ asset_id: a.asset_id, start: a.end - 92 * DAY, end: a.end }],
    get_export_link: [{ dataset: 'book_snapshots', asset_id: a.asset_id, start: a.start, end: a.end, format: 'parquet', depth: 100, interval: 1000 }],
  };

  let body = 0;
  const client = new Client({ name: 'tickhouse-bench', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', ctx.service.url), {
      requestInit: { headers: { Authorization: `Bearer ${ctx.service.apiKey}` } },
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        const bytes = new Uint8Array(await res.arrayBuffer());
        body = bytes.length;
        return new Response(bytes, { status: res.status, headers: res.headers });
      },
    }),
  );
  const rows: BenchRow[] = [];
  try {
    await client.listTools();
    for (const [name, argsList] of Object.entries(cases)) {
      let largest = { text: 0, body: 0, ms: 0 };
      for (const args of argsList) {
        const started = performance.now();
        const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
        const ms = performance.now() - started;
        if (result.isError) throw new Error(`${name} ${JSON.stringify(args)}: ${JSON.stringify(result.content)}`);
        const text = Buffer.byteLength((result.content[0] as { text: string }).text);
        if (text > largest.text) largest = { text, body, ms };
      }
      const bytes = (n: number) => `${n.toLocaleString('en-US')} B`;
      rows.push({
        workload: `mcp ${name}: largest answer (text; whole HTTP body), ${argsList.length} argument sets`,
        service: `${bytes(largest.text)}; ${bytes(largest.body)}`,
        engine: `${largest.ms.toFixed(0)} ms`,
        ratio: '',
      });
    }
    rows.push(await summaryAgainstEngine(ctx, client));
  } finally {
    await client.close();
  }
  return rows;
}

/** get_tick_summary over the largest asset's whole history, against tickSummary on the raw engine: best of 3 each. */
async function summaryAgainstEngine(ctx: BenchContext, client: Client): Promise<BenchRow> {
  const a = ctx.dataset.largest;
  const best = async (run: () => Promise<unknown>) => {
    let ms = Infinity;
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await run();
      ms = Math.min(ms, performance.now() - started);
    }
    return ms;
  };
  const range = { asset_id: a.asset_id, start: a.start, end: a.end };
  const service = await best(() => client.callTool({ name: 'get_tick_summary', arguments: range }));
  const engine = await best(() => tickSummary(ctx.engine, range));
  return {
    workload: `mcp get_tick_summary, ${a.ticks.toLocaleString('en-US')} ticks (vs the same read on the raw engine)`,
    service: `${service.toFixed(0)} ms`,
    engine: `${engine.toFixed(0)} ms`,
    ratio: (engine / service).toFixed(2),
  };
}
