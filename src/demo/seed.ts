import type { Engine } from '../clickhouse/engine.js';
import { type ReplayProgress, replayLines } from '../ingest/frame-files.js';
import { parseGammaMarkets } from '../ingest/gamma.js';
import { storeProtocols } from '../ingest/market-protocols.js';
import { withCaptureStory } from './capture-story.js';
import { demoTokens, generateDemo } from './frames.js';

export interface SeedDemoOptions {
  /** Tick rows to produce (default 300 000: loads in seconds on a small machine). */
  ticks?: number;
  /** Same seed, ticks, days, markets and end time → the same frames. */
  seed?: number | string;
  days?: number;
  markets?: number;
  /** Time of the last frame (default: now), so the demo reads as recent history. */
  endMs?: number;
  onProgress?: (progress: ReplayProgress) => void;
  /** Weave in a recorder's capture records (capture-story.ts): every coverage condition shows. The first-start load does. */
  captureStory?: boolean;
}

export interface SeedDemoSummary {
  sourceId: string;
  markets: number;
  assets: number;
  frames: number;
  ticks: number;
  snapshots: number;
  checkpoints: number;
  from: string;
  to: string;
  elapsedMs: number;
}

export const DEMO_DEFAULT_TICKS = 300_000;
export const DEMO_DEFAULT_SEED = 1;

/**
 * Generates the demo dataset and ingests it through the replay path, so the stored rows are what a
 * recording of the same frames would give. The source id names the generation inputs: seeding the
 * same dataset twice adds nothing.
 */
export async function seedDemo(engine: Engine, opts: SeedDemoOptions = {}): Promise<SeedDemoSummary> {
  const ticks = opts.ticks ?? DEMO_DEFAULT_TICKS;
  const seed = opts.seed ?? DEMO_DEFAULT_SEED;
  const demo = generateDemo({ seed, ticks, days: opts.days, markets: opts.markets, endMs: opts.endMs });
  const sourceId = `demo-${seed}-${ticks}-${demo.gammaMarkets.length}-${demo.startMs}-${demo.endMs}${opts.captureStory ? '-story' : ''}`;
  const markets = demo.gammaMarkets.map((m) => ({ conditionId: m.conditionId, tokens: demoTokens(m) }));
  const frames = opts.captureStory ? withCaptureStory(demo.frames(), markets, demo.startMs, demo.endMs) : demo.frames();
  await storeProtocols(engine, parseGammaMarkets(demo.gammaMarkets).protocols);
  const summary = await replayLines(engine, frames, { sourceId, markets: demo.gammaMarkets, onProgress: opts.onProgress });
  return {
    sourceId,
    markets: demo.gammaMarkets.length,
    assets: 2 * demo.gammaMarkets.length,
    frames: summary.normalizer.frames,
    ticks: summary.writer.rows.ticks,
    snapshots: summary.normalizer.snapshots,
    checkpoints: summary.normalizer.checkpoints,
    from: new Date(demo.startMs).toISOString(),
    to: new Date(demo.endMs).toISOString(),
    elapsedMs: Math.round(summary.elapsedMs),
  };
}
