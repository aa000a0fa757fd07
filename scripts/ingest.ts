import { access } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { runCli } from '../src/cli.js';
import { createEngine } from '../src/clickhouse/index.js';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { loadConfig } from '../src/config.js';
import { type ReplaySummary, readGammaFile, replayFile } from '../src/ingest/frame-files.js';
import { logGammaProblems, parseGammaMarkets } from '../src/ingest/gamma.js';
import { storeProtocols } from '../src/ingest/market-protocols.js';
import { errorText } from '../src/log.js';

const USAGE = `Usage: npm run ingest -- replay <file> [--markets <gamma.json>]

Replays a file of raw Polymarket market-channel frames (one frame per line, exactly as received;
plain, gzip or zstd) into the configured store (docs/INGEST.md). --markets: a Gamma /markets answer (JSON
array) for outcome labels and questions. Replaying the same file again adds nothing. The same as
\`npm run import -- recorder <file>\`, which also imports other archives (docs/INGEST.md §6).`;

const args = await parseCommandLine();
await runCli(() => replay(args.file, args.markets));

/** Bad arguments end with the message and the usage on stderr, exit code 2. */
async function parseCommandLine(): Promise<{ file: string; markets?: string }> {
  try {
    const { values, positionals } = parseArgs({
      allowPositionals: true,
      options: { markets: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
    if (values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    const [command, file, ...extra] = positionals;
    if (command !== 'replay') throw new Error(command ? `unknown command "${command}"` : 'missing command');
    if (!file) throw new Error('missing <file>');
    if (extra.length > 0) throw new Error(`unexpected argument "${extra[0]}"`);
    await access(file).catch(() => {
      throw new Error(`cannot read ${file}`);
    });
    // Read now so a bad metadata file is an argument error, not a failure after the engine opened.
    if (values.markets) await readGammaFile(values.markets);
    return { file, markets: values.markets };
  } catch (err) {
    process.stderr.write(`ingest: ${errorText(err)}\n${USAGE}\n`);
    process.exit(2);
  }
}

async function replay(file: string, marketsFile?: string) {
  const engine = createEngine(loadConfig());
  try {
    console.log(`ClickHouse: ${engine.location}`);
    await runMigrations(engine);
    if (marketsFile) {
      // Each market's protocol version (market_protocols); its rows go through the replay below.
      const gamma = parseGammaMarkets(await readGammaFile(marketsFile));
      logGammaProblems(gamma.problems, marketsFile);
      const stored = await storeProtocols(engine, gamma.protocols);
      const v2 = gamma.protocols.filter((p) => p.protocol_version === 'v2').length;
      console.log(
        `${marketsFile}: ${gamma.protocols.length} tokens (${gamma.protocols.length - v2} v1, ${v2} v2), ${gamma.invalid} markets skipped; ` +
          `${stored} protocol versions stored`,
      );
    }
    console.log(`Replaying ${file}${marketsFile ? ` with markets from ${marketsFile}` : ''} …`);
    const summary = await replayFile(engine, file, {
      marketsFile,
      onProgress: (p) => {
        const seconds = p.elapsedMs / 1000;
        console.log(`  ${p.lines} lines, ${p.rowsWritten} rows written, ${Math.round(p.rowsWritten / seconds)} rows/s, ${seconds.toFixed(1)} s`);
      },
    });
    console.log(formatSummary(file, summary));
  } finally {
    await engine.close();
  }
}

function formatSummary(file: string, s: ReplaySummary): string {
  const n = s.normalizer;
  const events = Object.entries(n.events)
    .filter(([, count]) => count > 0)
    .map(([type, count]) => `${type} ${count}`)
    .join(', ');
  const rows = s.writer.rows;
  const malformed = n.malformed > 0 ? `${n.malformed} (first at lines ${n.malformedLines.join(', ')})` : '0';
  return [
    `Replayed ${file} (source ${s.sourceId}) in ${(s.elapsedMs / 1000).toFixed(1)} s`,
    `  lines      ${n.lines} (${n.frames} frames, ${n.captures} capture records, ${n.pongs} PONG)`,
    `  events     ${events || 'none'}`,
    `  produced   ${n.ticks} ticks, ${n.snapshots} book snapshots, ${n.checkpoints} checkpoints, ${n.markets} market rows, ${n.marketEvents} market events`,
    `  written    ticks ${rows.ticks}, book_snapshots ${rows.book_snapshots}, markets ${rows.markets}, market_events ${rows.market_events},` +
      ` book_checks ${rows.book_checks}, capture_events ${rows.capture_events} (a batch stored by an earlier run is dropped by the engine)`,
    `  skipped    unknown types ${n.unknown}`,
    `  malformed  ${malformed}`,
    ...(s.invalidMarkets > 0 ? [`  markets file: ${s.invalidMarkets} market objects without usable outcomes/clobTokenIds skipped`] : []),
  ].join('\n');
}
