import { parseArgs } from 'node:util';
import { runCli } from '../src/cli.js';
import { createEngine } from '../src/clickhouse/index.js';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { loadConfig } from '../src/config.js';
import { readGammaFile } from '../src/ingest/frame-files.js';
import type { GammaMarket } from '../src/ingest/gamma.js';
import { FORMATS, type ImportFormat, type ImportPlan, planImport } from '../src/ingest/import/plan.js';
import { problemText } from '../src/ingest/import/problems.js';
import { dryRunText, runImport, summaryText } from '../src/ingest/import/run.js';
import { errorText } from '../src/log.js';

const USAGE = `Usage: npm run import -- <format> <files | dir | glob>… [--assets <id,…>] [--from <time>] [--to <time>]
                         [--markets <gamma.json>] [--progress <seconds>] [--dry-run]

Imports public archives into the configured store (docs/INGEST.md §6), through the normalizer the
live recorder uses. Formats:
  frames    one market-channel frame per line, optionally after its receive time (§3); plain, gzip or zstd
  recorder  the recorder's archive (as \`npm run ingest -- replay\`)
  pmxt      pmxt hourly Parquet (polymarket_orderbook_YYYY-MM-DDTHH.parquet, v1 or v2)
  tardis    Tardis CSV, incremental_book_L2 and trades of a day and symbol (tardis-dev file names)
--assets    only these asset ids (pmxt, tardis)
--from/--to pmxt hours / Tardis days in [from, to) (ISO 8601 or Unix ms); hours (days) of the range
            without a file are source_missing gaps (default range: first to last file)
--markets   a Gamma /markets answer: outcome labels, and condition ids for Tardis rows
--progress  seconds between progress lines (default 2)
--dry-run   print what would be imported, write nothing
Importing the same files again, or again after an interrupted run, adds nothing. Exit code 1 when
any input problem was found (each named with its file and line or row group), 2 on bad arguments.`;

interface Args {
  format: ImportFormat;
  inputs: string[];
  assets?: Set<string>;
  from?: number;
  to?: number;
  markets?: GammaMarket[];
  progressMs: number;
  dryRun: boolean;
}

function timeArg(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const t = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isSafeInteger(t) || t < 0) throw new Error(`--${name} "${v}" is neither ISO 8601 nor Unix ms`);
  return t;
}

async function parseCommandLine(): Promise<Args> {
  try {
    const { values, positionals } = parseArgs({
      allowPositionals: true,
      options: {
        assets: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        markets: { type: 'string' },
        progress: { type: 'string' },
        'dry-run': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    const [format, ...inputs] = positionals;
    if (!FORMATS.includes(format as ImportFormat)) throw new Error(format ? `unknown format "${format}"` : 'missing <format>');
    if (inputs.length === 0) throw new Error('missing <files | dir | glob>');
    const from = timeArg('from', values.from);
    const to = timeArg('to', values.to);
    if (from !== undefined && to !== undefined && to <= from) throw new Error('--to must be after --from');
    const assets = values.assets ? new Set(values.assets.split(',').filter((a) => a !== '')) : undefined;
    // A frame may name several assets: keeping some of its rows would not be the rows of a capture of them.
    if (assets && (format === 'frames' || format === 'recorder')) throw new Error(`--assets applies to pmxt and tardis, not to ${format}`);
    const markets = values.markets ? await readGammaFile(values.markets) : undefined;
    const progressSeconds = values.progress === undefined ? 2 : Number(values.progress);
    if (!(progressSeconds >= 0.05 && progressSeconds <= 3600)) throw new Error('--progress must be a number of seconds from 0.05 to 3600');
    return { format: format as ImportFormat, inputs, assets, from, to, markets, progressMs: progressSeconds * 1000, dryRun: values['dry-run'] ?? false };
  } catch (err) {
    process.stderr.write(`import: ${errorText(err)}\n${USAGE}\n`);
    process.exit(2);
  }
}

const args = await parseCommandLine();
await runCli(async () => {
  let plan: ImportPlan;
  try {
    plan = await planImport(args.format, args.inputs, { from: args.from, to: args.to });
  } catch (err) {
    process.stderr.write(`import: ${errorText(err)}\n`);
    process.exit(2);
  }
  if (args.dryRun) {
    console.log(dryRunText(plan));
    process.exit(plan.problems.length > 0 ? 1 : 0);
  }
  const engine = createEngine(loadConfig());
  let failed = false;
  try {
    console.log(`ClickHouse: ${engine.location}`);
    await runMigrations(engine);
    const summary = await runImport(engine, plan, {
      assets: args.assets,
      markets: args.markets,
      progressEveryMs: args.progressMs,
      onProblem: (p) => process.stderr.write(`import: ${problemText(p)}\n`),
      onProgress: (p) => {
        const eta = p.etaSeconds === null ? '?' : `${p.etaSeconds} s`;
        console.log(`  files ${p.unitsDone}/${p.units}, ${p.rows} rows, ${p.rowsPerSecond} rows/s, ETA ${eta}, ${(p.elapsedMs / 1000).toFixed(1)} s`);
      },
    });
    console.log(summaryText(plan, summary));
    failed = summary.problems > 0;
  } finally {
    await engine.close();
  }
  if (failed) process.exit(1);
});
