import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startPolymarketWsServer } from '../../test/support/polymarket-ws-server.js';
import { ASSETS, benchFrames, ITEMS_PER_FRAME } from './recorder-frames.js';
import type { BenchRow } from './types.js';

/**
 * Recorder throughput: a local market channel (this process) sends an initial dump and FRAMES
 * `price_change` frames as fast as the socket takes them to `npm run record`'s code running in a child
 * process on a fresh embedded engine; measured from the first frame received to the last row stored.
 * The baseline is the same engine inserting the same tick rows, already serialized, in batches of
 * the same size. Target: ≥ 50,000 price-change items/s.
 */
const FRAMES = 60_000;
const BATCH_ROWS = 20_000;

export async function benchRecorder(): Promise<BenchRow[]> {
  const server = await startPolymarketWsServer();
  const { dump, frames } = benchFrames(FRAMES);
  JSON.parse(dump).forEach((book: Record<string, unknown>) => server.setBook(book));
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./recorder-run.ts', import.meta.url)), server.url, String(FRAMES), String(BATCH_ROWS)],
    {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    const next = async () => {
      const { value, done } = await lines.next();
      if (done) throw new Error('the recorder bench process ended early');
      return JSON.parse(value);
    };
    await next();
    while (server.open()[0]?.assets.size !== ASSETS.length) await new Promise((r) => setTimeout(r, 5));
    for (const frame of frames) server.publish(frame);
    const r = (await next()) as { seconds: number; frames: number; ticks: number; rows: number; rawSeconds: number; rawTicks: number };
    if (r.ticks !== FRAMES * ITEMS_PER_FRAME + ASSETS.length) throw new Error(`stored ${r.ticks} ticks, expected ${FRAMES * ITEMS_PER_FRAME + ASSETS.length}`);
    const items = r.ticks / r.seconds;
    const raw = r.rawTicks / r.rawSeconds;
    return [
      {
        workload:
          `recorder: ${FRAMES.toLocaleString('en-US')} price_change frames × ${ITEMS_PER_FRAME} items from a local WebSocket into the embedded ` +
          `engine (batches of ${BATCH_ROWS.toLocaleString('en-US')})`,
        service: `${Math.round(items).toLocaleString('en-US')} items/s (${Math.round(r.frames / r.seconds).toLocaleString('en-US')} frames/s)`,
        engine: `${Math.round(raw).toLocaleString('en-US')} rows/s raw JSONEachRow inserts`,
        ratio: `${(items / raw).toFixed(2)} (target ≥ 50,000 items/s: ${items >= 50_000 ? 'met' : 'NOT met'})`,
      },
    ];
  } finally {
    child.kill('SIGTERM');
    await server.close();
  }
}
