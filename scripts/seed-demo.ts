import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { createGzip } from 'node:zlib';
import { runCli } from '../src/cli.js';
import { createEngine } from '../src/clickhouse/index.js';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { loadConfig } from '../src/config.js';
import { DEMO_MARKET_LIMIT, generateDemo } from '../src/demo/frames.js';
import { DEMO_DEFAULT_SEED, DEMO_DEFAULT_TICKS, seedDemo } from '../src/demo/seed.js';
import { errorText } from '../src/log.js';

const USAGE = `Usage: npm run seed-demo -- [--ticks N] [--seed S] [--days D] [--markets M] [--out file.jsonl[.gz]]

Generates realistic Polymarket market-channel frames (same seed, same frames; the last frame is now).
Without --out they are ingested into the configured store through the replay path; with --out they
are written to the file and its Gamma markets to <file>.markets.json, for
\`npm run ingest -- replay <file> --markets <file>.markets.json\`.`;

interface DemoArgs {
  seed: number | string;
  ticks: number;
  days: number;
  markets: number;
}

const { out, ...opts } = parseCommandLine();
await runCli(() => (out ? writeFrames(out, opts) : ingest(opts)));

/** Bad arguments end with the message and the usage on stderr, exit code 2. */
function parseCommandLine(): DemoArgs & { out?: string } {
  try {
    const { values } = parseArgs({
      options: {
        ticks: { type: 'string', default: String(DEMO_DEFAULT_TICKS) },
        seed: { type: 'string', default: String(DEMO_DEFAULT_SEED) },
        days: { type: 'string', default: '3' },
        markets: { type: 'string', default: '12' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    const days = Number(values.days);
    if (!(days > 0 && days <= 366)) throw new Error('--days must be a number of days in (0, 366]');
    return {
      ticks: integer('ticks', values.ticks, 0, 1e9),
      seed: /^-?\d+$/.test(values.seed) ? Number(values.seed) : values.seed,
      days,
      markets: integer('markets', values.markets, 1, DEMO_MARKET_LIMIT),
      out: values.out,
    };
  } catch (err) {
    process.stderr.write(`seed-demo: ${errorText(err)}\n${USAGE}\n`);
    process.exit(2);
  }
}

async function ingest(opts: DemoArgs) {
  const config = loadConfig();
  const engine = createEngine(config);
  try {
    console.log(`ClickHouse: ${engine.location}`);
    await runMigrations(engine);
    console.log(`Seeding ${opts.ticks} ticks over ${opts.days} days, ${opts.markets} markets, seed ${opts.seed} …`);
    const summary = await seedDemo(engine, {
      ...opts,
      onProgress: (p) => console.log(`  ${p.lines} frames read, ${p.rowsWritten} rows written, ${(p.elapsedMs / 1000).toFixed(1)} s`),
    });
    console.log(
      `Done in ${(summary.elapsedMs / 1000).toFixed(1)} s: ${summary.frames} frames → ${summary.ticks} ticks, ` +
        `${summary.snapshots} books, ${summary.checkpoints} checkpoints; ${summary.assets} assets of ${summary.markets} markets,` +
        ` ${summary.from} … ${summary.to}`,
    );
  } finally {
    await engine.close();
  }
}

async function writeFrames(out: string, opts: DemoArgs) {
  const started = performance.now();
  const demo = generateDemo(opts);
  const marketsFile = `${out}.markets.json`;
  await writeFile(marketsFile, `${JSON.stringify(demo.gammaMarkets, null, 1)}\n`);
  let frames = 0;
  let bytes = 0;
  let nextProgress = started + 2000;
  // Lines are joined into ~1 MB chunks: one stream write per line would dominate the run time.
  async function* chunks() {
    let chunk = '';
    for (const line of demo.frames()) {
      chunk += `${line}\n`;
      frames++;
      if (chunk.length >= 1 << 20) {
        bytes += chunk.length;
        yield chunk;
        chunk = '';
        if (performance.now() >= nextProgress) {
          nextProgress = performance.now() + 2000;
          console.log(`  ${frames} frames, ${(bytes / 1e6).toFixed(0)} MB`);
        }
      }
    }
    bytes += chunk.length;
    if (chunk) yield chunk;
  }
  const stages: Transform[] = out.endsWith('.gz') ? [createGzip({ level: 6 })] : [];
  await pipeline(Readable.from(chunks()), ...stages, createWriteStream(out));
  console.log(
    `Wrote ${frames} frames (${(bytes / 1e6).toFixed(0)} MB of text,` +
      ` ~${opts.ticks} ticks) to ${out} and ${demo.gammaMarkets.length} markets to ${marketsFile} ` +
      `in ${((performance.now() - started) / 1000).toFixed(1)} s; ${new Date(demo.startMs).toISOString()} … ${new Date(demo.endMs).toISOString()}`,
  );
  console.log(`Replay with: npm run ingest -- replay ${out} --markets ${marketsFile}`);
}

function integer(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} must be an integer in [${min}, ${max}]`);
  return n;
}
