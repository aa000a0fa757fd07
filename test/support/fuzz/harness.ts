import { metricValue } from '../stalled-reader.js';
import { contractViolations, KEY_SHAPE, type SentRequest } from './contract.js';
import { type FramingCase, framingCase, framingEnumeration } from './framing-cases.js';
import { type Exchange, exchange, header, healthz } from './raw-http.js';
import { caseRng } from './rng.js';
import { type Domain, enumeration, type OpenApiDocument, type Operation, operationsOf, requestBytes, type Size, schemaCase } from './schema-cases.js';
import type { FuzzService } from './service.js';
import { STALLED_KINDS, stalledCase } from './stalled-cases.js';
import { WS_KINDS, wsCase } from './ws-cases.js';

/**
 * The fuzz harness (issue 24): cases of three categories against the real service process, and after
 * EACH case the same checks — the process is alive, `GET /healthz` answers within HEALTHZ_MS, its
 * RSS stays under the bound, what it printed holds no key — besides the case's own checks (every
 * HTTP answer in the contract's shape, never a 5xx: contract.ts). A crash or a hang is a finding, and
 * the service is restarted so the run goes on. Cases are reproducible: case i of a category depends
 * only on (seed, category, i).
 */
export const CATEGORIES = ['schema', 'framing', 'websocket', 'stalled'] as const;
export type Category = (typeof CATEGORIES)[number];

/**
 * `/healthz` must answer within this after every case, on a machine with nothing else to do. On a
 * busy one (CI's two shared cores, or the CPU hog of issue 25) the bound grows with the service's own
 * /healthz time measured before the first case (20 × its median, when that is more), so the check
 * still catches a service that holds its event loop and not one that waits for a core.
 */
export const HEALTHZ_MS = 100;
/** During a case, no /healthz answer within this means the event loop is stuck: the case is a hang. */
const WATCHDOG_MS = 5_000;
/** A request's answer must have begun by then (a long 2xx stream is then cut, not failed). */
const ANSWER_MS = 5_000;

/**
 * The RSS bound, from the RSS after start-up (demo data loaded):
 *   start + 400 MB + 2 MB per connection a case holds open.
 * The 400 MB: the book cache (BOOK_CACHE_MB=32 here, counted whole), the engine's working memory for
 * the dataset's queries (5,000 ticks: a few MB, but chDB keeps arenas and caches of its own — tens
 * of MB after an export), V8's heap growing to its new-space and old-space steps under load (~100 MB
 * seen in clean runs) and glibc's arenas. The 2 MB per held connection: a replay's send buffer stops
 * growing at 1 MiB (HIGH_WATER in src/replay/session.ts) plus the socket's own buffers; a request held
 * half-sent costs at most its 16 KB of headers. Unbounded growth (a queue per message nobody reads)
 * passes this in seconds. Measured on the tree with the Tardis, MCP and import routes (2,374 cases):
 * clean runs peak at +188 MB on Node 20 and +273 MB on Node 24 (its heap steps are larger), hence
 * 400 MB: ~130 MB above the highest clean peak.
 */
export const RSS_HEADROOM = 400 * 2 ** 20;
export const RSS_PER_HELD_CONNECTION = 2 * 2 ** 20;
/**
 * While a case holds connections open, the RSS may exceed what it was before the case by this plus
 * RSS_PER_HELD_CONNECTION each: V8's new space (up to 32 MB: service.ts pins it) and allocator noise; clean runs stay
 * under ~40 MB. A queue per message the client does not read grows past it in a second or two.
 */
export const RSS_CASE_SLACK = 64 * 2 ** 20;

export type FindingKind =
  | 'crash'
  | 'hang'
  | 'slow-healthz'
  | 'rss'
  | '5xx'
  | 'shape'
  | 'key-echo'
  | 'key-in-log'
  | 'future-rows'
  | 'no-answer'
  | 'websocket'
  | 'export';

export interface Finding {
  category: Category;
  index: number;
  kind: FindingKind;
  detail: string;
  description: string;
}

export interface CategoryStats {
  cases: number;
  findings: number;
}

export interface FuzzReport {
  seed: number;
  stats: Record<Category, CategoryStats>;
  findings: Finding[];
  crashes: number;
  hangs: number;
  fiveXX: number;
  restarts: number;
  maxHealthzMs: number;
  /** The /healthz bound this run held the service to (HEALTHZ_MS, more on a busy machine). */
  healthzBoundMs: number;
  /** The case after which /healthz was slowest (category:index). */
  slowestCase: string;
  /** /healthz answers over HEALTHZ_MS whose immediate second ask was within it (no finding). */
  retried: number;
  rssStart: number;
  rssEnd: number;
  rssMax: number;
  rssLimit: number;
  seconds: number;
}

export interface FuzzOptions {
  seed: number;
  /** Cases per category (0 or absent: none). */
  cases: Partial<Record<Category, number>>;
  /** Run one case only: `category:index`. */
  only?: { category: Category; index: number };
  /** A line per finding, progress now and then. */
  log?: (line: string) => void;
  /** Stop a category after this many restarts (a broken build would otherwise restart on every case). */
  maxRestartsPerCategory?: number;
  /** Schema bound values: `core` (npm test) or `full` (npm run fuzz, the default). */
  size?: Size;
  /** Each request sent and the head and start of each answer (for replaying one case with --only). */
  trace?: (line: string) => void;
}

/** One case's result before the common checks: what it saw, and connections it still holds. */
interface CaseOutcome {
  description: string;
  /** Violations the case saw itself, each with its kind. */
  violations: { kind: FindingKind; detail: string }[];
  held: number;
  release(): Promise<void>;
  /** Checks to run once the held connections are released (answers that came meanwhile). */
  afterRelease?: () => { kind: FindingKind; detail: string }[];
}

export class FuzzHarness {
  private doc!: OpenApiDocument;
  private ops!: Operation[];
  /** Keys of the ring: regenerated keys replace theirs; a free key that hit its daily limit gives way to the next. */
  private unlimitedKey: string;
  private freeKeys: string[];
  private rssStart = 0;
  /** HEALTHZ_MS, or more on a busy machine (see there). */
  private healthzBound = HEALTHZ_MS;
  private trace: ((line: string) => void) | null = null;

  constructor(private readonly service: FuzzService) {
    this.unlimitedKey = service.facts.unlimitedKey;
    this.freeKeys = [...service.facts.freeKeys];
  }

  /** Every operation of the live document (read from the service, never a hand list). */
  async loadDocument(): Promise<Operation[]> {
    const r = await exchange(this.service.port, [`GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`], {
      methods: ['GET'],
      timeoutMs: 30_000,
      maxBody: 16 * 2 ** 20,
    });
    const res = r.responses[0];
    if (res?.status !== 200) throw new Error(`GET /v1/openapi.json: ${res?.status ?? 'no answer'}`);
    this.doc = JSON.parse(res.body.toString()) as OpenApiDocument;
    this.ops = operationsOf(this.doc);
    return this.ops;
  }

  /** The schema category's enumeration size (every operation, its corners, then every parameter × bound once). */
  schemaEnumeration(size: Size): number {
    return enumeration(this.ops, this.domain(), size).length;
  }

  static framingEnumeration(): number {
    return framingEnumeration().length;
  }

  static wsKinds(): number {
    return WS_KINDS;
  }

  /**
   * The cases of `npm test` per category: the schema's core enumeration, the framing enumeration and
   * 70 random framing cases after it (every 7th a pipelined burst or a slow partial request), each
   * WebSocket kind once, each stalled export and the full disk once. `npm run fuzz` runs 10× this by default.
   */
  testCases(): Record<Category, number> {
    return { schema: this.schemaEnumeration('core'), framing: framingEnumeration().length + 70, websocket: WS_KINDS, stalled: STALLED_KINDS };
  }

  async run(options: FuzzOptions): Promise<FuzzReport> {
    const started = performance.now();
    const log = options.log ?? (() => {});
    this.trace = options.trace ?? null;
    if (!this.ops) await this.loadDocument();
    // The bound is relative to the first start (demo data loaded), whatever ran since.
    this.rssStart ||= this.service.rss() ?? 0;
    this.healthzBound = Math.max(HEALTHZ_MS, 20 * (await this.healthzMedian()));
    const report: FuzzReport = {
      seed: options.seed,
      stats: {
        schema: { cases: 0, findings: 0 },
        framing: { cases: 0, findings: 0 },
        websocket: { cases: 0, findings: 0 },
        stalled: { cases: 0, findings: 0 },
      },
      findings: [],
      crashes: 0,
      hangs: 0,
      fiveXX: 0,
      restarts: 0,
      maxHealthzMs: 0,
      healthzBoundMs: this.healthzBound,
      slowestCase: '',
      retried: 0,
      rssStart: this.rssStart,
      rssEnd: 0,
      rssMax: this.rssStart,
      rssLimit: this.rssStart + RSS_HEADROOM,
      seconds: 0,
    };
    const add = (category: Category, index: number, description: string, kind: FindingKind, detail: string) => {
      const f = { category, index, kind, detail, description };
      report.findings.push(f);
      report.stats[category].findings++;
      if (kind === 'crash') report.crashes++;
      if (kind === 'hang') report.hangs++;
      if (kind === '5xx') report.fiveXX++;
      log(`FINDING ${kind} [${category}:${index} seed ${options.seed}] ${detail}\n    case: ${description.slice(0, 400)}`);
    };

    for (const category of CATEGORIES) {
      const total = options.only ? (options.only.category === category ? 1 : 0) : (options.cases[category] ?? 0);
      let restartsHere = 0;
      for (let k = 0; k < total; k++) {
        const index = options.only ? options.only.index : k;
        const rssBefore = this.service.rss() ?? 0;
        const caseStarted = performance.now();
        // The case runs under a watchdog: a process that dies or stops answering ends it at once.
        let stuck: { kind: 'crash' | 'hang'; detail: string } | null = null;
        let restarted = false;
        const outcomePromise = this.runCase(category, index, options.seed, options.size ?? 'full').catch(
          (err: Error): CaseOutcome => ({
            description: `${category} case ${index}`,
            violations: [{ kind: 'no-answer', detail: `the case failed: ${err.message}` }],
            held: 0,
            release: async () => {},
          }),
        );
        let settled = false;
        void outcomePromise.then(() => (settled = true));
        while (!settled) {
          await Promise.race([outcomePromise, new Promise((r) => setTimeout(r, 500))]);
          if (settled) break;
          const exited = this.service.exited();
          if (exited) {
            stuck = { kind: 'crash', detail: `the service died during the case (${exited}); its last output:\n${this.service.outputTail().slice(-1500)}` };
            break;
          }
          const h = await healthz(this.service.port, WATCHDOG_MS);
          if (!h.ok && (await this.service.exitWithin(h.why.startsWith('no answer') ? 0 : 3_000))) {
            stuck = {
              kind: 'crash',
              detail: `the service died during the case (${this.service.exited()}); its last output:\n${this.service.outputTail().slice(-1500)}`,
            };
            break;
          }
          if (!h.ok) {
            stuck = { kind: 'hang', detail: `GET /healthz during the case: ${h.why} (RSS ${mb(this.service.rss())})` };
            // Killing it ends the case's connections, so the case returns.
            await this.service.restart();
            restarted = true;
            break;
          }
        }
        const outcome = await outcomePromise;
        report.stats[category].cases++;
        const findingsBefore = report.findings.length;

        // The checks after the case, with its connections still open.
        const slowestBefore = report.maxHealthzMs;
        stuck ??= await this.checkAlive(report, (kind, detail) => add(category, index, outcome.description, kind, detail));
        if (report.maxHealthzMs > slowestBefore) report.slowestCase = `${category}:${index}`;
        // Answers a dead or hung process did not give are that finding, not more.
        for (const v of outcome.violations) if (!(stuck && v.kind === 'no-answer')) add(category, index, outcome.description, v.kind, v.detail);
        let overMemory = false;
        if (!stuck) {
          const rss = this.service.rss() ?? 0;
          report.rssMax = Math.max(report.rssMax, rss);
          const limit = this.rssStart + RSS_HEADROOM + RSS_PER_HELD_CONNECTION * outcome.held;
          // Connections held open may cost their buffers, not more: the growth since the case began.
          const caseLimit = rssBefore + RSS_CASE_SLACK + RSS_PER_HELD_CONNECTION * outcome.held;
          if (rss > limit) {
            overMemory = true;
            add(
              category,
              index,
              outcome.description,
              'rss',
              `RSS ${mb(rss)} > bound ${mb(limit)} (start ${mb(this.rssStart)}, before the case ${mb(rssBefore)}, ${outcome.held} connection(s) held)`,
            );
          } else if (outcome.held && rss > caseLimit) {
            overMemory = true;
            add(
              category,
              index,
              outcome.description,
              'rss',
              `RSS ${mb(rss)} with the case's ${outcome.held} connection(s) held: +${mb(rss - rssBefore)} since it began, bound +${mb(caseLimit - rssBefore)}`,
            );
          }
        }
        await outcome.release().catch(() => {});
        // The plan's slots of the case's exports and replays are free before the next case (they go once
        // the server has seen each connection end, a moment after the client did).
        await this.heavyRequestsEnded();
        for (const v of outcome.afterRelease?.() ?? []) if (!(stuck && v.kind === 'no-answer')) add(category, index, outcome.description, v.kind, v.detail);
        if (stuck) add(category, index, outcome.description, stuck.kind, stuck.detail);
        // Dead, hung or over the memory bound: a fresh process (on the same data) for the next case.
        if ((stuck || overMemory) && !restarted) {
          await this.service.restart();
          restarted = true;
        }
        if (restarted) {
          report.restarts++;
          restartsHere++;
        }
        // The log, once the case is over: no key may be printed (access log, errors, anything).
        const printed = this.service.takeOutput();
        const leaked = [...new Set(printed.match(KEY_SHAPE) ?? [])];
        if (leaked.length)
          add(category, index, outcome.description, 'key-in-log', `the service printed ${leaked.length} key(s): …${excerpt(printed, leaked[0])}…`);
        if (report.findings.length > findingsBefore && options.maxRestartsPerCategory !== undefined && restartsHere > options.maxRestartsPerCategory) {
          log(`${category}: stopped after ${restartsHere} restarts`);
          break;
        }
        const caseSeconds = (performance.now() - caseStarted) / 1000;
        if (caseSeconds > 3) log(`${category}:${index} took ${caseSeconds.toFixed(1)} s: ${outcome.description.slice(0, 160)}`);
        if ((k + 1) % 200 === 0) log(`${category}: ${k + 1}/${total} cases, ${report.stats[category].findings} findings, RSS ${mb(this.service.rss())}`);
      }
    }
    report.rssEnd = this.service.rss() ?? 0;
    report.rssMax = Math.max(report.rssMax, report.rssEnd);
    report.seconds = (performance.now() - started) / 1000;
    return report;
  }

  /**
   * Alive, and /healthz within HEALTHZ_MS. An answer later than that is asked once more at once: a
   * process that is slow (blocked, or burning CPU in the background) is slow twice; one late answer on
   * a machine busy with other test files is a scheduling hiccup, counted (`retried`) but no finding.
   */
  /** The median of 20 /healthz round trips before any case: how fast this machine answers now. */
  private async healthzMedian(): Promise<number> {
    const times: number[] = [];
    for (let i = 0; i < 20; i++) times.push((await healthz(this.service.port, WATCHDOG_MS)).ms);
    return times.sort((a, b) => a - b)[10];
  }

  private async checkAlive(report: FuzzReport, add: (kind: FindingKind, detail: string) => void): Promise<{ kind: 'crash' | 'hang'; detail: string } | null> {
    const died = () => ({
      kind: 'crash' as const,
      detail: `the service died (${this.service.exited()}); its last output:\n${this.service.outputTail().slice(-1500)}`,
    });
    if (this.service.exited()) return died();
    const first = await healthz(this.service.port, WATCHDOG_MS);
    if (first.ok) report.maxHealthzMs = Math.max(report.maxHealthzMs, first.ms);
    if (first.ok && first.ms <= this.healthzBound) return null;
    if (!first.ok) {
      // A refused connection: the process is on its way out.
      if (await this.service.exitWithin(first.why.startsWith('no answer') ? 0 : 3_000)) return died();
      return { kind: 'hang', detail: `GET /healthz after the case: ${first.why} (RSS ${mb(this.service.rss())})` };
    }
    const again = await healthz(this.service.port, WATCHDOG_MS);
    if (again.ok && again.ms <= this.healthzBound) {
      report.retried++;
      return null;
    }
    if (!again.ok)
      return (await this.service.exitWithin(again.why.startsWith('no answer') ? 0 : 3_000))
        ? died()
        : { kind: 'hang', detail: `GET /healthz after the case: ${again.why} (RSS ${mb(this.service.rss())})` };
    add(
      'slow-healthz',
      `GET /healthz after the case took ${first.ms.toFixed(0)} ms, asked again ${again.ms.toFixed(0)} ms (bound ${this.healthzBound.toFixed(0)} ms)`,
    );
    return null;
  }

  /** Until no request holds a slot of its plan (tickhouse_heavy_requests 0), for at most 10 s. */
  private async heavyRequestsEnded(): Promise<void> {
    for (const deadline = performance.now() + 10_000; performance.now() < deadline && !this.service.exited(); ) {
      const held = await metricValue(this.service.port, 'tickhouse_heavy_requests').catch(() => 0);
      if (!(held > 0)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  private domain(): Domain {
    return {
      now: Date.now(),
      assets: this.service.facts.assets,
      first: this.service.facts.first,
      last: this.service.facts.last,
      keys: { unlimited: this.unlimitedKey, free: this.freeKeys[0] },
    };
  }

  private runCase(category: Category, index: number, seed: number, size: Size): Promise<CaseOutcome> {
    const rng = caseRng(seed, category, index);
    if (category === 'schema') return this.schema(index, rng, size);
    if (category === 'framing') return this.framing(index, rng);
    if (category === 'stalled') return this.stalled(index);
    return this.websocket(index, rng, size === 'full');
  }

  private async schema(index: number, rng: ReturnType<typeof caseRng>, size: Size): Promise<CaseOutcome> {
    const d = this.domain();
    const built = schemaCase(this.ops, d, index, rng, this.service.port, size);
    const sentAt = Date.now();
    const bytes = requestBytes(built);
    const r = await exchange(this.service.port, [bytes], { methods: [built.method], timeoutMs: ANSWER_MS, streamMs: 1_000, maxBody: 4 * 2 ** 20 });
    const violations: CaseOutcome['violations'] = [];
    const res = r.responses[0];
    this.traceExchange([bytes], r);
    // A body of megabytes may be refused by closing the connection while it is still being sent.
    const refusedBody = bytes.length > 1 << 20 && (r.error === 'EPIPE' || r.error === 'ECONNRESET');
    if (!res) {
      if (!this.service.exited() && !refusedBody)
        violations.push({
          kind: 'no-answer',
          detail: r.timedOut ? `no answer within ${ANSWER_MS} ms` : `closed without an answer (${r.error ?? r.garbage ?? 'no bytes'})`,
        });
    } else {
      const sent: SentRequest = {
        method: built.method,
        target: built.target,
        kind: 'route',
        sentAt,
        secrets: [...built.secrets, this.unlimitedKey, ...this.freeKeys],
        issuesKey: /register|regenerate/.test(built.op.path) && res.status < 300,
      };
      for (const v of contractViolations(sent, res)) violations.push({ kind: kindOf(v), detail: `${res.status}: ${v}` });
      if (res.status !== 101 && !header(res, 'x-request-id') && res.status < 431)
        violations.push({ kind: 'shape', detail: `${res.status} without X-Request-Id` });
      this.learnKeys(built.keyUsed, built.op.path, res.status, res.body.toString());
    }
    return { description: `${built.description} → ${res ? res.status : 'no answer'}`, violations, held: 0, release: async () => {} };
  }

  private traceExchange(sent: (string | Buffer)[], r: Exchange) {
    if (!this.trace) return;
    const text = sent.map((p) => (typeof p === 'string' ? p : p.toString('latin1'))).join('');
    this.trace(`>>> ${JSON.stringify(text.length > 2_000 ? `${text.slice(0, 2_000)}…` : text)}`);
    for (const res of r.responses) {
      this.trace(
        `<<< ${res.version} ${res.status} ${res.reason}\n${res.headers.map(([n, v]) => `    ${n}: ${v}`).join('\n')}\n    ` +
          `${JSON.stringify(res.body.subarray(0, 1_000).toString('utf8'))}${res.truncated ? ' (cut)' : ''}`,
      );
    }
    if (r.timedOut || r.closedEarly || r.error || r.garbage)
      this.trace(`<<< timedOut ${r.timedOut}, closedEarly ${r.closedEarly}, error ${r.error}, garbage ${JSON.stringify(r.garbage)}`);
  }

  /** A regenerated key replaces the one that asked; a free key at its daily limit gives way to the next. */
  private learnKeys(used: 'unlimited' | 'free' | null, path: string, status: number, body: string) {
    if (!used) return;
    if (/regenerate/.test(path) && status === 200) {
      const key = (JSON.parse(body) as { data: { api_key: string } }).data.api_key;
      if (used === 'free') this.freeKeys[0] = key;
      else this.unlimitedKey = key;
    }
    if (status === 429 && used === 'free' && body.includes('rate_limit_exceeded') && this.freeKeys.length > 1) this.freeKeys.push(this.freeKeys.shift()!);
  }

  private async framing(index: number, rng: ReturnType<typeof caseRng>): Promise<CaseOutcome> {
    const d = this.domain();
    const c: FramingCase = framingCase(index, rng, { port: this.service.port, keys: d.keys, asset: d.assets[0], now: d.now });
    const sentAt = Date.now();
    const secrets = [...c.secrets, this.unlimitedKey, ...this.freeKeys];
    const exchanges = await Promise.all(
      Array.from({ length: c.connections }, () =>
        exchange(this.service.port, c.pieces, { methods: c.methods, timeoutMs: ANSWER_MS, streamMs: 1_000, maxBody: 1 * 2 ** 20, holdAfterSend: c.hold }),
      ),
    );
    const check = (rs: Exchange[]) => {
      const out: { kind: FindingKind; detail: string }[] = [];
      for (const r of rs.slice(0, 1)) {
        r.responses.forEach((res, i) => {
          const sent: SentRequest = {
            method: c.methods[i] ?? 'GET',
            target: c.targets[i] ?? '/',
            kind: 'raw',
            sentAt,
            secrets,
            issuesKey: /register|regenerate/.test(c.targets[i] ?? '') && res.status < 300,
          };
          for (const v of contractViolations(sent, res)) out.push({ kind: kindOf(v), detail: `answer ${i + 1}: ${res.status}: ${v}` });
        });
        if (r.garbage) out.push({ kind: 'shape', detail: `bytes that are not HTTP: ${JSON.stringify(r.garbage.slice(0, 120))}` });
        if (r.responses.length < c.minResponses && !this.service.exited()) {
          out.push({
            kind: 'no-answer',
            detail:
              `${r.responses.length} answer(s) of ${c.minResponses} owed: ` +
              `${r.timedOut ? `none within ${ANSWER_MS} ms` : `connection closed (${r.error ?? 'FIN'})`}`,
          });
        }
      }
      return out;
    };
    const status = exchanges[0].responses.map((res) => res.status).join(',') || 'no answer';
    this.traceExchange(
      c.pieces.filter((p): p is string | Buffer => typeof p === 'string' || Buffer.isBuffer(p)),
      exchanges[0],
    );
    if (!c.hold) return { description: `${c.description} → ${status}`, violations: check(exchanges), held: 0, release: async () => {} };
    return {
      description: `${c.description} (held open during the checks)`,
      violations: [],
      held: c.connections,
      release: async () => exchanges.forEach((x) => x.close()),
      afterRelease: () => check(exchanges),
    };
  }

  private async stalled(index: number): Promise<CaseOutcome> {
    const d = this.domain();
    const o = await stalledCase(index, {
      port: this.service.port,
      pid: this.service.pid,
      unlimitedKey: this.unlimitedKey,
      assets: d.assets,
      first: d.first,
      last: d.last,
      now: d.now,
    });
    return {
      description: o.description,
      violations: o.violations.map((detail) => ({ kind: 'export' as const, detail })),
      held: o.held,
      release: o.release,
      afterRelease: () => (o.afterRelease?.() ?? []).map((detail) => ({ kind: 'export' as const, detail })),
    };
  }

  private async websocket(index: number, rng: ReturnType<typeof caseRng>, big: boolean): Promise<CaseOutcome> {
    const d = this.domain();
    const kind = wsCase(index);
    const before = this.service.rss() ?? 0;
    const grown = () => (this.service.rss() ?? before) - before;
    const o = await kind.run(rng, {
      port: this.service.port,
      key: this.unlimitedKey,
      assets: d.assets,
      now: d.now,
      first: d.first,
      big,
      grown,
      stopAt: RSS_CASE_SLACK + 8 * RSS_PER_HELD_CONNECTION,
    });
    return { description: o.description, violations: o.violations.map((detail) => ({ kind: 'websocket' as const, detail })), held: o.held, release: o.release };
  }
}

function kindOf(violation: string): FindingKind {
  if (violation.startsWith('5xx')) return '5xx';
  if (violation.startsWith('key echoed')) return 'key-echo';
  if (violation.startsWith('export row in the future')) return 'future-rows';
  return 'shape';
}

function mb(bytes: number | null): string {
  return bytes === null ? '?' : `${Math.round(bytes / 2 ** 20)} MB`;
}

function excerpt(text: string, needle: string): string {
  const at = text.indexOf(needle);
  return text.slice(Math.max(0, at - 120), at + needle.length + 40).replace(/\s+/g, ' ');
}

/** The summary line: categories and cases, crashes, 5xx, the slowest /healthz, RSS. */
export function summaryLine(r: FuzzReport): string {
  const cats = CATEGORIES.map((c) => `${c} ${r.stats[c].cases}`).join(', ');
  const total = CATEGORIES.reduce((n, c) => n + r.stats[c].cases, 0);
  const kinds = new Map<string, number>();
  for (const f of r.findings) kinds.set(f.kind, (kinds.get(f.kind) ?? 0) + 1);
  const other = [...kinds]
    .filter(([k]) => !['crash', 'hang', '5xx'].includes(k))
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  return (
    `fuzz seed=${r.seed}: ${total} cases (${cats}); crashes ${r.crashes}, hangs ${r.hangs}, 5xx ${r.fiveXX}, other findings ${other || '0'}; ` +
    `restarts ${r.restarts}; max /healthz ${r.maxHealthzMs.toFixed(1)} ms (after ${r.slowestCase || '-'}; ${r.retried} late answer(s) asked again within ` +
    `${r.healthzBoundMs.toFixed(0)} ms); RSS start ${mb(r.rssStart)}, end ${mb(r.rssEnd)}, max ${mb(r.rssMax)} (bound ${mb(r.rssLimit)} + 2 MB per held ` +
    `connection); ${r.seconds.toFixed(1)} s`
  );
}

/** Findings grouped by kind and what was hit, with the first case of each (for a test's failure message). */
export function findingsDigest(findings: Finding[], limit = 40): string {
  const groups = new Map<string, Finding[]>();
  for (const f of findings) {
    const key = `${f.kind} | ${f.detail
      .replace(/\d{4,}/g, 'N')
      .replace(/th_live_[\w-]+/g, 'KEY')
      .slice(0, 140)}`;
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  return [...groups.values()]
    .slice(0, limit)
    .map(
      (fs) =>
        `${fs.length}× ${fs[0].kind} [${fs[0].category}:${fs[0].index}] ${fs[0].detail.slice(0, 300)}\n      first case: ${fs[0].description.slice(0, 300)}`,
    )
    .join('\n');
}
