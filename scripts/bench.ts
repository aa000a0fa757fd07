import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { openAccountStore } from '../src/accounts/index.js';
import { generateApiKey, hashApiKey } from '../src/auth/keys.js';
import { EmbeddedEngine } from '../src/clickhouse/embedded.js';
import { runMigrations } from '../src/clickhouse/migrations.js';
import { benchPaths, ensureDataset, GROUP_TICKS, groupsFor } from './bench/dataset.js';
import { benchTicks } from './bench/ticks.js';
import type { BenchContext, BenchFn, BenchRow } from './bench/types.js';

/**
 * `npm run bench`: builds (once) the dataset under .bench-data/, opens the raw engine on one copy,
 * starts the service on another, runs every bench module, and prints one table: workload, service
 * figure, raw engine figure, ratio. Numbers are for this machine, in this run.
 */
const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)), '.bench-data');
/** Modules other issues contribute; each exports one or more `bench*` functions (BenchFn). */
const CONTRIBUTED = ['candles', 'orderbook', 'book', 'auth', 'recorder', 'venue', 'ingest', 'import', 'replay', 'python-client', 'mcp', 'tardis'];

const say = (line: string) => process.stderr.write(`${line}\n`);

/**
 * BENCH_TICKS: the archive sizes to run, in ticks, comma-separated (default 21000000, the dataset of
 * one group). `BENCH_TICKS=21000000,100000000` builds the larger archive once (cached like the
 * first) and runs every bench on each, printing each workload's rows side by side: the same
 * questions about the same asset, beside more or less other history.
 */
function archiveSizes(): number[] {
  const sizes = (process.env.BENCH_TICKS ?? String(GROUP_TICKS)).split(',').map((s) => groupsFor(Number(s.trim())));
  return [...new Set(sizes)];
}

async function main() {
  // Modules that build their own input (BENCH_STANDALONE, e.g. import) run without the dataset and service.
  const standalone = await standaloneOnly();
  if (standalone) {
    const rows: BenchRow[] = [];
    for (const [name, fn] of standalone) {
      say(`running ${name}…`);
      rows.push(...(await fn(undefined as unknown as BenchContext)));
    }
    process.stdout.write(table(rows));
    process.exit(0);
  }
  const sizes = archiveSizes();
  const perSize: BenchRow[][] = [];
  for (const groups of sizes) {
    perSize.push(await benchArchive(groups, sizes.length > 1));
    // Each archive's rows as soon as they are known (the larger one takes a while).
    if (sizes.length > 1) say(table(perSize.at(-1)!));
  }
  // Side by side: each row of the first archive, then the same row of the others.
  const rows = perSize[0].flatMap((row, i) => [row, ...perSize.slice(1).map((other) => other[i])].filter((r) => r !== undefined));
  process.stdout.write(table(rows));
  process.exit(0);
}

/** With BENCH_ONLY naming only modules that export BENCH_STANDALONE, their bench functions; else null. */
async function standaloneOnly(): Promise<[string, BenchFn][] | null> {
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
  if (!only) return null;
  const benches: [string, BenchFn][] = [];
  for (const name of only) {
    const file = fileURLToPath(new URL(`./bench/${name}.ts`, import.meta.url));
    if (!CONTRIBUTED.includes(name) || !existsSync(file)) return null;
    const mod = (await import(file)) as Record<string, unknown>;
    if (mod.BENCH_STANDALONE !== true) return null;
    for (const [fn, value] of Object.entries(mod)) if (fn.startsWith('bench') && typeof value === 'function') benches.push([`${name}.${fn}`, value as BenchFn]);
  }
  return benches;
}

/** Every bench on one archive (`groups` of GROUP_TICKS); `label`: workloads prefixed with the archive size. */
async function benchArchive(groups: number, label: boolean): Promise<BenchRow[]> {
  const dataset = await ensureDataset(ROOT, say, groups);
  const paths = benchPaths(ROOT, groups);
  const size = `${Math.round(dataset.ticks / 1e6)}M ticks`;
  say(
    `dataset: ${dataset.ticks.toLocaleString('en-US')} ticks, ${dataset.snapshots.toLocaleString('en-US')} snapshots,` +
      ` ${dataset.assets.length} assets (largest ${dataset.largest.ticks.toLocaleString('en-US')}), built in ${dataset.buildSeconds} s`,
  );
  const apiKey = await unlimitedKey(paths.service);
  const engine = EmbeddedEngine.open(paths.raw, 4);
  // The raw copy gets the schema the service gives its own at start (a dataset built before a migration).
  await runMigrations(engine);
  let service = await startService(paths.service);
  const rows: BenchRow[] = [await storageRow(engine, dataset.ticks)];
  try {
    const ctx: BenchContext = {
      dataset,
      engine,
      service: { url: service.url, apiKey, pid: service.child.pid! },
      serviceRss: () => rssOf(service.child.pid!),
      async restartService() {
        await stopService(service.child);
        service = await startService(paths.service);
        Object.assign(ctx.service, { url: service.url, pid: service.child.pid! });
      },
    };
    const benches: [string, BenchFn][] = [['ticks', benchTicks]];
    for (const name of CONTRIBUTED) {
      const file = fileURLToPath(new URL(`./bench/${name}.ts`, import.meta.url));
      if (!existsSync(file)) continue;
      const mod = (await import(file)) as Record<string, unknown>;
      for (const [fn, value] of Object.entries(mod))
        if (fn.startsWith('bench') && typeof value === 'function') benches.push([`${name}.${fn}`, value as BenchFn]);
    }
    // BENCH_ONLY=ticks,auth runs a subset (module names).
    const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
    for (const [name, fn] of benches.filter(([n]) => !only || only.includes(n.split('.')[0]))) {
      say(`running ${name} (${size})…`);
      try {
        rows.push(...(await fn(ctx)));
      } catch (err) {
        rows.push({ workload: name, service: 'failed', engine: '', ratio: String((err as Error).message ?? err).slice(0, 120) });
      }
    }
  } finally {
    await stopService(service.child);
    await engine.close();
  }
  return label ? rows.map((r) => ({ ...r, workload: `[${size}] ${r.workload}` })) : rows;
}

/** What the archive takes on disk (every active part of every table, the rollups included), per tick. */
async function storageRow(engine: EmbeddedEngine, ticks: number): Promise<BenchRow> {
  const [{ bytes, ticks_bytes }] = await engine.rows<{ bytes: string; ticks_bytes: string }>(
    `SELECT sum(bytes_on_disk) AS bytes, sumIf(bytes_on_disk, table = 'ticks') AS ticks_bytes FROM system.parts WHERE active AND database = currentDatabase()`,
  );
  return {
    workload: 'storage on disk (all tables, one copy)',
    service: `${(Number(bytes) / 2 ** 30).toFixed(2)} GiB, ${(Number(bytes) / ticks).toFixed(1)} bytes/tick`,
    engine: `ticks table alone: ${(Number(ticks_bytes) / ticks).toFixed(1)} bytes/tick`,
    ratio: '',
  };
}

/** A fresh unlimited account in the service's embedded account store (opened and closed before the service starts). */
async function unlimitedKey(dataDir: string): Promise<string> {
  const store = await openAccountStore({ dataDir, REDIS_URL: undefined, REDIS_CLUSTER: false });
  const key = generateApiKey('th_');
  const now = Date.now();
  await store.createAccount({ email: null, keyHash: hashApiKey(key), plan: 'unlimited', plan_expires_at: now + 30 * 86_400_000, now });
  await store.close();
  return key;
}

async function startService(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  // BENCH_PROFILE=<dir>: the service writes a V8 CPU profile there when it exits.
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${resolve(process.env.BENCH_PROFILE)}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', fileURLToPath(new URL('../src/main.ts', import.meta.url))], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      DEMO_DATA: '0',
      LOG_LEVEL: 'warn',
      API_KEY_PREFIX: 'th_',
      REDIS_URL: '',
      CLICKHOUSE_URL: '',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolveUrl, reject) => {
    child.once('exit', (code) => reject(new Error(`service exited with ${code}`)));
    lines.on('line', (line) => {
      const m = /serving on (http:\/\/[^\s]+)/.exec(line);
      if (m) resolveUrl(m[1].replace('localhost', '127.0.0.1'));
    });
  });
  return { child, url };
}

/** SIGTERM, and the exit awaited: the data directory is free for the next service. */
async function stopService(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

function table(rows: BenchRow[]): string {
  const head: BenchRow = { workload: 'workload', service: 'service', engine: 'raw engine (same run)', ratio: 'ratio' };
  const all = [head, ...rows];
  const cols = ['workload', 'service', 'engine', 'ratio'] as const;
  const width = Object.fromEntries(cols.map((c) => [c, Math.max(...all.map((r) => r[c].length))])) as Record<(typeof cols)[number], number>;
  const line = (r: BenchRow) => `| ${cols.map((c) => r[c].padEnd(width[c])).join(' | ')} |`;
  const rule = `|${cols.map((c) => '-'.repeat(width[c] + 2)).join('|')}|`;
  return `${[line(head), rule, ...rows.map(line)].join('\n')}\n`;
}

main().catch((err) => {
  say(String((err as Error).stack ?? err));
  process.exit(1);
});
