/**
 * Coverage as a timeline (docs/TIME-MACHINE.md §4): an asset's capture records, with the runs of the
 * recorders, folded into segments that say at every millisecond whether the asset was captured and,
 * when not, why. Pure: the query module reads the records, this decides what they mean.
 */

export type GapReason = 'not_recording' | 'disconnected' | 'not_subscribed' | 'source_missing' | 'unknown';
export type CoverageState = 'captured' | GapReason;

export interface RunRecord {
  t: number;
  seq: number;
  run: string;
  /** `source_missing`: an imported archive has no file from here on (docs/INGEST.md §6); it begins a run like `start`. */
  kind: 'start' | 'stop' | 'source_missing';
}

export interface AssetRecord {
  t: number;
  seq: number;
  run: string;
  socket: number;
  kind: 'subscribe' | 'open' | 'close' | 'resync' | 'unsubscribe';
}

/** `from` ≤ t < `to`. */
export interface Segment {
  from: number;
  to: number;
  state: CoverageState;
}

export interface Reconnect {
  t: number;
  resynced: boolean;
}

interface RunState {
  /** The run subscribed the asset. */
  subscribed: boolean;
  /** Sockets on which the asset is live. */
  live: Set<number>;
  /** A connection of the asset was lost in this run, so its next `open` is a reconnect. */
  lost: boolean;
  /** The reconnect per socket still waiting for its first book. */
  awaitingBook: Map<number, Reconnect>;
  /** A span an imported archive lacks, not a recorder run. */
  missing: boolean;
}

/**
 * The segments covering [from, to) and every reconnect, from the records of every run (all of
 * them: the earliest `start` is where capture records begin) and the asset's records (at least all
 * since the start of the run that was active at `from`), each sorted by (t, seq).
 *
 * - An asset without any capture record is `unknown` throughout: its data came from other files.
 * - Otherwise, at each instant: `captured` when live on a socket of an active run (from its `open` to its
 *   `close`, or to its `unsubscribe`: the recorder left it, its market resolved or left Gamma's list); else
 *   `disconnected` when an active run had subscribed it (its socket is reconnecting);
 *   `not_subscribed` when a run was active without it; `source_missing` inside a span an imported
 *   archive lacks (a `source_missing` record until the next start or its stop); `unknown` before the
 *   first run ever started;
 *   `not_recording` otherwise.
 * - Runs are taken to be sequential: a run that never recorded its `stop` (a crash) ended when the
 *   next run started. Repeated records (the same archive replayed over a live recording) change
 *   nothing.
 */
export function timeline(
  runs: readonly RunRecord[],
  records: readonly AssetRecord[],
  hasRecords: boolean,
  from: number,
  to: number,
): { segments: Segment[]; reconnects: Reconnect[] } {
  if (to <= from) return { segments: [], reconnects: [] };
  if (!hasRecords) return { segments: [{ from, to, state: 'unknown' }], reconnects: [] };
  const active = new ActiveRuns(runs.find((r) => r.kind !== 'stop')?.t ?? Infinity);
  const out = new Segments(from, to);
  for (const e of mergeByTime(runs, records)) {
    // The state up to a record is the state before it.
    out.advance(e.t, active);
    active.apply(e);
  }
  out.advance(to, active);
  return { segments: out.list, reconnects: active.reconnects };
}

/** Segments of [from, to), each as long as the state stays the same. */
class Segments {
  readonly list: Segment[] = [];
  private cursor: number;
  constructor(
    from: number,
    private readonly to: number,
  ) {
    this.cursor = from;
  }

  /** Extends the timeline to `t` (at most `to`) in the state the runs are in now. */
  advance(t: number, runs: ActiveRuns): void {
    const until = Math.min(t, this.to);
    if (until <= this.cursor) return;
    const state = runs.state(this.cursor);
    const last = this.list.at(-1);
    if (last && last.state === state) last.to = until;
    else this.list.push({ from: this.cursor, to: until, state });
    this.cursor = until;
  }
}

/** The runs active at the current record, what each has of the asset, and the reconnects seen so far. */
class ActiveRuns {
  readonly reconnects: Reconnect[] = [];
  private readonly active = new Map<string, RunState>();
  /** The first run's start: before it, nothing could have been captured (`unknown`). */
  constructor(private readonly firstStart: number) {}

  state(t: number): CoverageState {
    const all = [...this.active.values()];
    if (all.some((r) => r.live.size > 0)) return 'captured';
    if (all.some((r) => r.subscribed)) return 'disconnected';
    if (all.some((r) => r.missing)) return 'source_missing';
    if (all.length > 0) return 'not_subscribed';
    return t < this.firstStart ? 'unknown' : 'not_recording';
  }

  apply(e: RunRecord | AssetRecord): void {
    if (e.kind === 'start' || e.kind === 'source_missing') {
      // Runs are sequential: a run that never stopped ended when the next one started.
      for (const run of this.active.keys()) if (run !== e.run) this.active.delete(run);
      this.run(e.run).missing = e.kind === 'source_missing';
    } else if (e.kind === 'stop') {
      this.active.delete(e.run);
    } else {
      this.socketRecord(this.run(e.run), e as AssetRecord);
    }
  }

  /** A record of one of the asset's sockets in a run: subscribe, open, close, unsubscribe or resync. */
  private socketRecord(run: RunState, e: AssetRecord): void {
    const { socket } = e;
    if (e.kind === 'subscribe') run.subscribed = true;
    else if (e.kind === 'open') {
      if (run.lost && run.live.size === 0) {
        const reconnect = { t: e.t, resynced: false };
        this.reconnects.push(reconnect);
        run.awaitingBook.set(socket, reconnect);
      }
      run.subscribed = true;
      run.live.add(socket);
    } else if (e.kind === 'close') {
      if (run.live.delete(socket)) run.lost = true;
      run.awaitingBook.delete(socket);
    } else if (e.kind === 'unsubscribe') {
      run.live.delete(socket);
      run.awaitingBook.delete(socket);
      run.subscribed = run.live.size > 0;
    } else {
      const reconnect = run.awaitingBook.get(socket);
      if (reconnect) reconnect.resynced = true;
      run.awaitingBook.delete(socket);
    }
  }

  private run(id: string): RunState {
    let s = this.active.get(id);
    if (!s) this.active.set(id, (s = { subscribed: false, live: new Set(), lost: false, awaitingBook: new Map(), missing: false }));
    return s;
  }
}

function* mergeByTime(runs: readonly RunRecord[], records: readonly AssetRecord[]): Generator<RunRecord | AssetRecord> {
  let i = 0;
  let j = 0;
  while (i < runs.length || j < records.length) {
    const r = runs[i];
    const a = records[j];
    if (a === undefined || (r !== undefined && (r.t < a.t || (r.t === a.t && r.seq <= a.seq)))) {
      yield r;
      i++;
    } else {
      yield a;
      j++;
    }
  }
}

/** The parts of the segments inside [from, to), adjacent parts of equal state merged. */
export function clip(segments: readonly Segment[], from: number, to: number): Segment[] {
  const out: Segment[] = [];
  for (const s of segments) {
    const a = Math.max(s.from, from);
    const b = Math.min(s.to, to);
    if (a >= b) continue;
    const last = out.at(-1);
    if (last && last.state === s.state && last.to === a) last.to = b;
    else out.push({ from: a, to: b, state: s.state });
  }
  return out;
}
