import { z } from 'zod';
import { assertInWindow } from '../../auth/history-window.js';
import { invalidParameter } from '../../http/errors.js';
import { coverageReport } from '../../queries/coverage.js';
import { DAY } from '../../time.js';
import { CoverageSchema } from '../../use-cases/coverage.js';
import { assertOrdered, assetId, instant, toMs } from '../inputs.js';
import { defineTool } from '../tool.js';

/** The longest range (days listed at most 93) and the most intervals of each list per answer. */
export const MAX_COVERAGE_DAYS = 92;
export const MAX_INTERVALS = 100;

const LISTS = ['captured', 'gaps', 'reconnects'] as const;

export const getCoverage = defineTool({
  name: 'get_coverage',
  title: 'Coverage of a range',
  description:
    'What the recorder captured for one outcome token in [start, end] (inclusive), as GET /v1/coverage answers it: captured intervals and gaps ' +
    '(from ≤ t < to, Unix ms, with reason not_recording | disconnected | not_subscribed | unknown), reconnects, exchange books verified or drifted ' +
    'against the rebuilt book, and one condition per UTC day (available | degraded | missing | unknown) with its ticks. ' +
    `Bounded: ranges of at most ${MAX_COVERAGE_DAYS} days; captured, gaps and reconnects keep their first ${MAX_INTERVALS} entries (omitted counts ` +
    'the rest), drift its first 100 (~40 KB at most).',
  input: z.strictObject({
    asset_id: assetId(),
    start: instant('Start of the range: Unix ms or ISO 8601'),
    end: instant('End of the range (inclusive): Unix ms or ISO 8601'),
  }),
  output: CoverageSchema.extend({
    omitted: z.object({ captured: z.number().int(), gaps: z.number().int(), reconnects: z.number().int() }),
  }),
  async run(args, deps, call) {
    const start = toMs('start', args.start);
    const end = toMs('end', args.end);
    assertOrdered(start, end);
    assertInWindow(call.window, start);
    if (Math.min(end, call.window.latestPossible) - start > MAX_COVERAGE_DAYS * DAY) {
      throw invalidParameter('end', `end must be at most ${MAX_COVERAGE_DAYS} days after start here; GET /v1/coverage answers longer ranges`);
    }
    const report = await coverageReport(deps.engine, { asset_id: args.asset_id, start, end }, deps.clock.now(), call.signal);
    const omitted = { captured: 0, gaps: 0, reconnects: 0 };
    for (const list of LISTS) omitted[list] = Math.max(0, report[list].length - MAX_INTERVALS);
    return {
      ...report,
      captured: report.captured.slice(0, MAX_INTERVALS),
      gaps: report.gaps.slice(0, MAX_INTERVALS),
      reconnects: report.reconnects.slice(0, MAX_INTERVALS),
      omitted,
    };
  },
});
