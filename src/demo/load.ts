import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppDeps } from '../deps.js';
import { log } from '../log.js';
import { printDemoKeyOnFirstStart } from './demo-key.js';
import { seedDemo } from './seed.js';

/**
 * First start on an empty store: load the demo dataset (DEMO_DATA=0 disables it) so a fresh
 * `npm start` has something to show; then, in embedded mode with no accounts yet, print a
 * ready-to-use local key.
 */
export async function loadDemoDataIfEmpty(deps: Pick<AppDeps, 'config' | 'engine' | 'accounts' | 'clock'>) {
  await loadDemoTicksIfEmpty(deps);
  await printDemoKeyOnFirstStart(deps);
}

/**
 * `DATA_DIR/demo-load.json`: the inputs of the load under way and whether it finished. A load killed
 * halfway (the store no longer empty) resumes on the next start: the same inputs generate the same
 * batches, and the engine drops the ones it already stored (deduplication tokens, see ingest/writer).
 */
interface DemoLoad {
  ticks: number;
  endMs: number;
  finished: boolean;
}

async function loadDemoTicksIfEmpty(deps: Pick<AppDeps, 'config' | 'engine' | 'clock'>) {
  if (!deps.config.DEMO_DATA) return;
  const file = join(deps.config.dataDir, 'demo-load.json');
  let load = readDemoLoad(file);
  if (load?.finished) return;
  if (load) {
    log.info('resuming the interrupted demo load', { ticks: load.ticks });
  } else {
    const [{ n }] = await deps.engine.rows<{ n: string }>('SELECT count() AS n FROM ticks');
    if (Number(n) > 0) return;
    load = { ticks: deps.config.DEMO_TICKS, endMs: deps.clock.now(), finished: false };
    writeDemoLoad(file, load);
    log.info('empty store: loading the demo dataset', { ticks: load.ticks });
  }
  const started = performance.now();
  const summary = await seedDemo(deps.engine, { ticks: load.ticks, endMs: load.endMs, captureStory: true });
  writeDemoLoad(file, { ...load, finished: true });
  log.info('demo dataset loaded', { seconds: Math.round((performance.now() - started) / 100) / 10, summary });
}

function readDemoLoad(file: string): DemoLoad | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DemoLoad;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Temp file + rename: a kill leaves the old state or the new one, never half a file. */
function writeDemoLoad(file: string, load: DemoLoad) {
  writeFileSync(`${file}.tmp`, JSON.stringify(load));
  renameSync(`${file}.tmp`, file);
}
