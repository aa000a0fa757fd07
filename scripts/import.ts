import { parseArgs } from 'node:util';
import { runCli } from '../src/cli.js';
import { createEngine, type Engine } from '../src/clickhouse/index.js';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { loadConfig } from '../src/config.js';
import { readGammaFile } from '../src/ingest/frame-files.js';
import type { GammaMarket } from '../src/ingest/gamma.js';
import { ledgerStatus } from '../src/ingest/import/ledger.js';
import { FORMATS, type ImportFormat, type ImportPlan, planImport } from '../src/ingest/import/plan.js';
import { problemText } from '../src/ingest/import/problems.js';
import { progressText } from '../src/ingest/import/progress.js';
import { dryRunText, runImport, summaryText } from '../src/ingest/import/run.js';
import { errorText } from '../src/log.js';
import { parseTime } from '../src/time.js';

const USAGE = `Usage: npm run import -- <format> <files | dir | glob>… [--assets <id,…>] [--from <time>] [--to <time>]
                         [--markets <gamma.json>] [--progress <seconds>] [--dry-run]
       npm run import -- --status

Imports public archives into the configured store (docs/INGEST.md §6). Formats:
  frames    one market-channel frame per line, optionally after its receive time (§3); plain, gzip or zstd
  recorder  the recorder's archive (as \`npm run ingest -- replay\`)
  pmxt      pmxt hourly Parquet (polymarket_orderbook_YYYY-MM-DDTHH.parquet, v1 or v2), read by the engine
  pmxt-kalshi  pmxt's Kalshi hours (kalshi_orderbook_YYYY-MM-DDTHH.parquet), read by the engine; ids kalshi:<ticker>
  tardis    Tardis CSV, incremental_book_L2 and trades of a day and symbol (tardis-dev file names), read by the engine
--assets    only these asset ids (pmxt, pmxt-kalshi, tardis)
--from/--to pmxt (pmxt-kalshi) hours / Tardis days in [from, to) (ISO 8601 or Unix ms); hours (days) between the files
            taken that no file covers are source_missing gaps
--markets   a Gamma /markets answer: outcome labels, and condition ids for Tardis rows
--progress  seconds between progress lines when the output is not a terminal (default 2)
--dry-run   print what would be imported, write nothing
--status    list what the ledger says was imported into this store
Importing the same files again, a whole file after some of its --assets, or a file that grew since,
adds nothing twice; so does running again after an interrupted import. Exit code 1 when any input
problem was found (each named with its file and line or row group), 2 on bad arguments.`;

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
  const t = parseTime(v);
  if (t === undefined) throw new Error(`--${name} "${v}" is neither an existing ISO 8601 date or time (e.g. 2026-05-01T10:00Z) nor Unix ms`);
  return t;
}

async function parseCommandLine(): Promise<Args | 'status'> {
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
        status: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    if (values.status) {
      if (positionals.length > 0) throw new Error('--status takes no format or files');
      return 'status';
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

/** The configured store, migrated, for the length of `work`. */
async function withEngine(work: (engine: Engine) => Promise<void>): Promise<void> {
  const engine = createEngine(loadConfig());
  try {
    await runMigrations(engine);
    await work(engine);
  } finally {
    await engine.close();
  }
}

const args = await parseCommandLine();
await runCli(async () => {
  if (args === 'status') {
    await withEngine(async (engine) => console.log(await ledgerStatus(engine)));
    return;
  }
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
  let failed = false;
  // On a terminal one line is redrawn (every 0.2 s); in a log, a line every --progress seconds.
  const tty = process.stdout.isTTY === true;
  await withEngine(async (engine) => {
    console.log(`ClickHouse: ${engine.location}`);
    const summary = await runImport(engine, plan, {
      assets: args.assets,
      markets: args.markets,
      progressEveryMs: tty ? 200 : args.progressMs,
      onProblem: (p) => process.stderr.write(`${tty ? '\r\x1b[K' : ''}import: ${problemText(p)}\n`),
      onProgress: (p) => {
        const line = progressText(p, tty ? process.stdout.columns : undefined);
        if (tty) process.stdout.write(`\r\x1b[K${line}`);
        else console.log(`  ${line}`);
      },
    });
    if (tty) process.stdout.write('\r\x1b[K');
    console.log(summaryText(plan, summary));
    failed = summary.problems > 0;
  });
  if (failed) process.exit(1);
});
