import type { Engine } from '../../src/clickhouse/engine.js';
import type { DatasetInfo } from './dataset.js';

/** One line of `npm run bench`: a workload, the service's figure, the baseline's, and their ratio. */
export type BenchRow = { workload: string; service: string; engine: string; ratio: string };

/**
 * What scripts/bench.ts hands every bench module's exported `bench*` functions. A module may ignore
 * it (e.g. one that starts its own server).
 */
export interface BenchContext {
  dataset: DatasetInfo;
  /** The raw engine, in the bench process, on an identical copy of the dataset: the baseline. */
  engine: Engine;
  /** The service (src/main.ts, embedded engine on its own copy of the dataset), running. */
  service: { url: string; apiKey: string; pid: number };
  /** The service process's resident memory now, in bytes. */
  serviceRss(): number;
  /** Stops the service and starts a fresh process on the same data (`service` then names it): cold caches. */
  restartService(): Promise<void>;
}

export type BenchFn = (ctx: BenchContext) => Promise<BenchRow[]>;
