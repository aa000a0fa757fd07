import WebSocket from 'ws';
import type { BenchContext, BenchRow } from './types.js';

/**
 * Issue 15's workloads: the replay WebSocket (docs/TIME-MACHINE.md §1) with one client.
 * - speed=max over the largest asset, a window of REPLAY_EVENTS events: events/s against the raw
 *   engine's rows/s reading the same rows (its one in-order range read of them, bytes only, same
 *   output format), and the service's RSS growth. Targets: ≥ 300,000 events/s, ≥ 0.5× the engine,
 *   growth ≤ 150 MB.
 * - speed=1 and speed=10 over the busiest minute of the dataset, all assets subscribed: each event's
 *   lateness against start + (t − from) / speed, start being where the least late event puts the
 *   server's clock. Target: p99 ≤ 10 ms. This is where pacing is measured precisely: the test
 *   (test/replay-flow.test.ts) asserts only that no event is early and a lateness bound a loaded
 *   2-core machine meets (issue 25).
 */
const REPLAY_EVENTS = 5_000_000;
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const MB = 1e6;

/** The same rows the replay reads for one asset, in one in-order read: the engine's pace for them. */
const RAW_SQL = `
SELECT ms, seq, kind, asset_id, market, best_bid, best_ask, price, size, side, bids, asks FROM (
  SELECT toUnixTimestamp64Milli(t) AS ms, seq, toString(event) AS kind, asset_id, market, best_bid, best_ask, price, size,
         toString(book_side) AS side, CAST([], 'Array(Tuple(price Float64, size Float64))') AS bids,
         CAST([], 'Array(Tuple(price Float64, size Float64))') AS asks, t
  FROM ticks WHERE asset_id = {id:String} AND event != 'book' AND t > fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND t <=
    fromUnixTimestamp64Milli({to:Int64}, 'UTC')
  UNION ALL
  SELECT toUnixTimestamp64Milli(t) AS ms, seq, 'book' AS kind, asset_id, market, toFloat64(0), toFloat64(0), toFloat64(0), toFloat64(0), '', bids, asks, t
  FROM book_snapshots WHERE asset_id = {id:String} AND is_checkpoint = 0 AND t > fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND t <=
    fromUnixTimestamp64Milli({to:Int64}, 'UTC')
) ORDER BY t, seq
SETTINGS output_format_json_quote_64bit_integers = 0`;

async function eventsSent(ctx: BenchContext): Promise<number> {
  const text = await (await fetch(`${ctx.service.url}/metrics`)).text();
  return Number(/^tickhouse_replay_events_total (\S+)$/m.exec(text)?.[1] ?? 0);
}

/** One replay to its close; `onMessage` sees every message with its arrival time. */
function replay(ctx: BenchContext, query: Record<string, string | number>, assets: string[], onMessage: (text: string, at: number) => void = () => {}) {
  const qs = new URLSearchParams(Object.entries({ ...query, key: ctx.service.apiKey }).map(([k, v]) => [k, String(v)]));
  const ws = new WebSocket(`${ctx.service.url.replace('http', 'ws')}/v1/replay/market?${qs}`);
  return new Promise<[number, string]>((resolve, reject) => {
    ws.on('open', () => ws.send(JSON.stringify({ assets_ids: assets, type: 'market' })));
    ws.on('message', (data) => onMessage(data.toString(), performance.now()));
    ws.on('close', (code, reason) => resolve([code, reason.toString()]));
    ws.on('unexpected-response', (_req, res) => reject(new Error(`replay handshake: HTTP ${res.statusCode}`)));
    ws.on('error', reject);
  });
}

export async function benchReplay(ctx: BenchContext): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const big = ctx.dataset.largest;
  const [[to]] = await ctx.engine.compactRows<[number]>(
    `SELECT toUnixTimestamp64Milli(t) FROM ticks WHERE asset_id = {id:String} ORDER BY t,` +
      ` seq LIMIT 1 OFFSET {n:UInt64} SETTINGS output_format_json_quote_64bit_integers = 0`,
    { params: { id: big.asset_id, n: REPLAY_EVENTS - 1 } },
  );
  const from = big.start - 1;

  // The engine reading the same rows, once to warm the cache, then measured.
  const raw = async () => {
    const started = performance.now();
    let lines = 0;
    for await (const chunk of ctx.engine.stream(RAW_SQL, 'JSONCompactEachRow', { params: { id: big.asset_id, from, to } })) {
      for (let i = (chunk as Buffer).indexOf(10); i !== -1; i = (chunk as Buffer).indexOf(10, i + 1)) lines++;
    }
    return { lines, ms: performance.now() - started };
  };
  await raw();
  const engine = await raw();

  const rssBefore = ctx.serviceRss();
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, ctx.serviceRss())), 50);
  const sentBefore = await eventsSent(ctx);
  const started = performance.now();
  const close = await replay(ctx, { from, to, speed: 'max' }, [big.asset_id]);
  const elapsed = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, ctx.serviceRss());
  const events = (await eventsSent(ctx)) - sentBefore;
  if (close[0] !== 1000) throw new Error(`replay closed with ${close.join(' ')}`);
  const eventsPerS = (events / elapsed) * 1000;
  const rowsPerS = (engine.lines / engine.ms) * 1000;
  rows.push({
    workload: `replay speed=max, largest asset, ${fmt(events)} events (engine: same rows, one in-order read)`,
    service: `${fmt(eventsPerS)} events/s`,
    engine: `${fmt(rowsPerS)} rows/s`,
    ratio: `${fmt(eventsPerS / rowsPerS, 2)}× (targets ≥ 300,000/s, ≥ 0.5×)`,
  });
  rows.push({
    workload: `replay speed=max, service RSS growth over ${fmt(events)} events`,
    service: `${fmt((peak - rssBefore) / MB)} MB`,
    engine: '',
    ratio: 'target ≤ 150 MB',
  });

  for (const speed of [1, 10]) {
    rows.push(
      ...(await pacedRows(ctx, speed).catch((err) => [
        { workload: `replay speed=${speed}`, service: 'failed', engine: '', ratio: String((err as Error).message).slice(0, 120) },
      ])),
    );
  }
  return rows;
}

/** The busiest minute of the dataset at `speed`, every asset subscribed: each message's lateness. */
async function pacedRows(ctx: BenchContext, speed: number): Promise<BenchRow[]> {
  const [[minute]] = await ctx.engine.compactRows<[number]>(
    `SELECT intDiv(toUnixTimestamp64Milli(t), 60000) * 60000 AS m FROM ticks GROUP BY m ORDER BY count() DESC,` +
      ` m LIMIT 1 SETTINGS output_format_json_quote_64bit_integers = 0`,
  );
  const arrivals: [t: number, at: number][] = [];
  const paced = await replay(
    ctx,
    { from: minute, to: minute + 60_000, speed },
    ctx.dataset.assets.map((a) => a.asset_id),
    (text, at) => {
      if (text.startsWith('[')) return;
      const m = /"timestamp":"(\d+)"/.exec(text);
      if (m) arrivals.push([Number(m[1]), at]);
    },
  );
  if (paced[0] !== 1000) throw new Error(`paced replay closed with ${paced.join(' ')}`);
  if (!arrivals.length) throw new Error('the paced replay sent no events');
  const start = Math.min(...arrivals.map(([t, at]) => at - (t - minute) / speed));
  const lateness = arrivals.map(([t, at]) => at - (start + (t - minute) / speed)).sort((a, b) => a - b);
  const p = (q: number) => lateness[Math.min(lateness.length - 1, Math.floor(lateness.length * q))];
  return [
    {
      workload: `replay speed=${speed}, busiest 60 s window, ${ctx.dataset.assets.length} assets, ${fmt(arrivals.length)} messages: lateness`,
      service: `p50 ${fmt(p(0.5), 1)} ms, p90 ${fmt(p(0.9), 1)} ms, p99 ${fmt(p(0.99), 1)} ms, max ${fmt(lateness.at(-1)!, 1)} ms`,
      engine: '',
      ratio: 'target p99 ≤ 10 ms',
    },
  ];
}
