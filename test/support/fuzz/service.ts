import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openEmbeddedStore } from '../../../src/accounts/embedded-store.js';
import { generateApiKey, hashApiKey } from '../../../src/auth/keys.js';
import { freePort } from '../global-setup.js';
import { exchange } from './raw-http.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** Free keys made up front: each serves 100 data requests a day (plan free), then the next one is used. */
const FREE_KEYS = 12;

export interface ServiceFacts {
  /** Plan unlimited (a year). */
  unlimitedKey: string;
  /** Plan free: its window is today (UTC) only, 100 data requests a day. */
  freeKeys: string[];
  /** Assets with data, most active first. */
  assets: string[];
  /** First and last tick of the dataset (ms). */
  first: number;
  last: number;
}

/**
 * The real service (`src/main.ts`) as a child process on a loopback port, with the demo dataset in a
 * temporary DATA_DIR and accounts made before it starts (one unlimited, FREE_KEYS free), so the fuzz
 * harness can watch it from outside: is the process alive, its RSS (/proc/<pid>/status), everything it
 * prints (the access log is searched for keys). `restart` kills it (SIGKILL) and starts it again on
 * the same DATA_DIR after a crash or a hang, so a run goes on after a finding.
 */
export class FuzzService {
  child!: ChildProcess;
  port = 0;
  /** stdout + stderr not yet taken by `takeOutput`, and the tail kept for crash reports. */
  private unread = '';
  private tail = '';
  private exitInfo: string | null = null;
  restarts = 0;

  private constructor(
    readonly dataDir: string,
    readonly facts: ServiceFacts,
    private readonly env: Record<string, string>,
  ) {}

  static async start(options: { demoTicks?: number; env?: Record<string, string> } = {}): Promise<FuzzService> {
    const dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-fuzz-'));
    // Accounts first, in the store the service will open: it prints no demo key when accounts exist.
    const store = await openEmbeddedStore(dataDir);
    const now = Date.now();
    const unlimitedKey = generateApiKey('th_');
    await store.createAccount({ email: null, keyHash: hashApiKey(unlimitedKey), plan: 'unlimited', plan_expires_at: now + 365 * 86_400_000, now });
    const freeKeys: string[] = [];
    for (let i = 0; i < FREE_KEYS; i++) {
      const key = generateApiKey('th_');
      await store.createAccount({ email: null, keyHash: hashApiKey(key), plan: 'free', plan_expires_at: null, now });
      freeKeys.push(key);
    }
    await store.close();
    const env = {
      DATA_DIR: dataDir,
      DEMO_DATA: '1',
      DEMO_TICKS: String(options.demoTicks ?? 5_000),
      // The access log is read: a key must never be printed.
      LOG_LEVEL: 'info',
      // A small book cache: the RSS bound below counts it in full.
      BOOK_CACHE_MB: '32',
      ...options.env,
    };
    const service = new FuzzService(dataDir, { unlimitedKey, freeKeys, assets: [], first: 0, last: 0 }, env);
    await service.spawn();
    // The demo load runs after the service is serving; DATA_DIR/demo-load.json says when it is done.
    await service.until(
      () => {
        const file = join(dataDir, 'demo-load.json');
        return existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { finished: boolean }).finished;
      },
      120_000,
      'the demo dataset to load',
    );
    const markets = JSON.parse((await service.get('/v1/markets?limit=1000')).toString()) as { data: { asset_id: string }[] };
    const stats = JSON.parse((await service.get('/v1/markets/stats')).toString()) as { data: { first_timestamp: number; last_timestamp: number } };
    service.facts.assets = markets.data.map((m) => m.asset_id);
    service.facts.first = stats.data.first_timestamp;
    service.facts.last = stats.data.last_timestamp;
    if (!service.facts.assets.length) throw new Error('the demo dataset has no assets');
    service.takeOutput();
    return service;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Null while running; else how it ended (exit code or signal) and the last lines it printed. */
  exited(): string | null {
    return this.exitInfo;
  }

  /** Resolves once the process has exited, or after `ms` (a closed port often comes just before the exit event). */
  async exitWithin(ms: number): Promise<string | null> {
    if (this.exitInfo !== null) return this.exitInfo;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise((r) => this.child.once('exit', r)), new Promise((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
    return this.exitInfo;
  }

  /** VmRSS in bytes (null once the process is gone). */
  rss(): number | null {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'));
      return m ? Number(m[1]) * 1024 : null;
    } catch {
      return null;
    }
  }

  /** What the service printed since the last call. */
  takeOutput(): string {
    const out = this.unread;
    this.unread = '';
    return out;
  }

  /** The last ~4 KB it printed (for crash reports). */
  outputTail(): string {
    return this.tail;
  }

  /** Kills the process (SIGKILL: it may be hung) and starts it again on the same data. */
  async restart(): Promise<void> {
    await this.kill();
    this.restarts++;
    await this.spawn();
    this.takeOutput();
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  private async kill() {
    if (this.exitInfo === null) {
      const gone = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGKILL');
      await gone;
    }
  }

  private async spawn() {
    this.port = await freePort();
    this.exitInfo = null;
    // Only this process's banner counts.
    this.unread = '';
    this.tail = '';
    // The RSS bounds measure memory the service keeps. V8's young generation is garbage by definition
    // and its cap depends on the Node version: 32 MB on Node 20, 128 MB on Node 24 (measured: a PING
    // flood grew Node 24's RSS by +98 MB that way, retaining nothing). Node 20's cap on every version,
    // so the same bounds hold under both.
    const child = spawn(process.execPath, ['--max-semi-space-size=16', '--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, CLICKHOUSE_URL: '', REDIS_URL: '', NOWPAYMENTS_API_KEY: '', HOST: '127.0.0.1', PORT: String(this.port), ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    const take = (d: Buffer) => {
      const s = d.toString();
      this.unread += s;
      this.tail = (this.tail + s).slice(-4096);
      // A run that never takes its output must not hold all of it.
      if (this.unread.length > 64 * 2 ** 20) this.unread = this.unread.slice(-32 * 2 ** 20);
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
    child.once('exit', (code, signal) => {
      this.exitInfo = `exit ${signal ?? code}`;
    });
    await this.until(() => this.tail.includes('tickhouse is serving on') || this.unread.includes('tickhouse is serving on'), 90_000, 'the service to serve');
    // One request through the stack first: the checks measure a warm process, not its first request's JIT.
    await this.get('/healthz');
  }

  /** Waits for `done()` (checked every 50 ms), failing if the process exits first or after `ms`. */
  private async until(done: () => boolean, ms: number, what: string) {
    const deadline = Date.now() + ms;
    while (!done()) {
      if (this.exitInfo !== null) throw new Error(`the service ended (${this.exitInfo}) before ${what}:\n${this.tail}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${this.tail}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private async get(path: string): Promise<Buffer> {
    const r = await exchange(this.port, [`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`], {
      methods: ['GET'],
      timeoutMs: 30_000,
      maxBody: 64 * 2 ** 20,
    });
    const res = r.responses[0];
    if (res?.status !== 200)
      throw new Error(`GET ${path}: ${res ? `${res.status} ${res.body.toString().slice(0, 200)}` : JSON.stringify({ ...r, socket: null })}`);
    return res.body;
  }
}
