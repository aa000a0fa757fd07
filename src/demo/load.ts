import { printDemoKeyOnFirstStart } from './demo-key.js';
import type { AppDeps } from '../deps.js';
import { seedDemo } from './seed.js';
import { log } from '../log.js';

/**
 * First start on an empty store: load the demo dataset (DEMO_DATA=0 disables it) so a fresh
 * `npm start` has something to show; then, in embedded mode with no accounts yet, print a
 * ready-to-use local key.
 */
export async function loadDemoDataIfEmpty(deps: Pick<AppDeps, 'config' | 'engine' | 'accounts' | 'clock'>) {
  await loadDemoTicksIfEmpty(deps);
  await printDemoKeyOnFirstStart(deps);
}

async function loadDemoTicksIfEmpty(deps: Pick<AppDeps, 'config' | 'engine'>) {
  if (!deps.config.DEMO_DATA) return;
  const [{ n }] = await deps.engine.rows<{ n: string }>('SELECT count() AS n FROM ticks');
  if (Number(n) > 0) return;
  log.info('empty store: loading the demo dataset', { ticks: deps.config.DEMO_TICKS });
  const started = performance.now();
  const summary = await seedDemo(deps.engine, { ticks: deps.config.DEMO_TICKS });
  log.info('demo dataset loaded', { seconds: Math.round((performance.now() - started) / 100) / 10, summary });
}
