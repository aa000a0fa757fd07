import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { BookReader } from '../book-history/port.js';
import type { Engine } from '../clickhouse/engine.js';
import { LoopBreaks } from '../event-loop.js';
import { errorText, log } from '../log.js';
import { MAX_ASSETS, parseClientMessage } from './client-messages.js';
import { type ReplayMessage, replayMessages } from './store-read.js';
import { bookArray, bookOfState, type ReplayRow } from './wire.js';

export interface ReplayParams {
  from: number;
  to: number;
  /** Replay ms per wall ms; Infinity = `max` (as fast as the client reads). */
  speed: number;
}

export interface SessionDeps {
  engine: Engine;
  books: BookReader;
  /** Called with the number of stored events each sent message carried. */
  onEvents: (n: number) => void;
  requestId: string;
}

/**
 * Bytes the socket may hold unsent before the replay stops reading the store (and the client's own
 * messages) until the client has taken them: enough to keep a fast client busy, small enough that a
 * stalled one costs nothing.
 */
const HIGH_WATER = 1 << 20;
/** Initial books read at once when many assets subscribe together. */
const BOOK_READS = 4;

/**
 * Where the replay stands: the last message sent was at `t`, its last event had `seq`, and `tied`
 * holds the assets with an event at exactly (t, seq) that were sent. Every event of a subscribed asset
 * ordered at or before it was sent (or lies in the book the asset got when it subscribed), so a read
 * restarted from `t` resumes exactly by skipping those.
 */
interface ReplayPosition {
  t: number;
  seq: number;
  tied: Set<string>;
}

const WOKEN = Symbol('woken');
/**
 * `wake` when no wait is on. One function made once: a `() => {}` made inside `interruptible` would
 * keep that call's scope alive for as long as it stayed in `wake` — the awaited promise, so the batch
 * of messages it resolved with. At speed=max every batch then outlived young-generation GCs and was
 * promoted (~3 MB per scavenge; 47 full GCs over 3M events, 12 without; 313k → 465k events/s
 * in-process).
 */
const NOTHING_TO_WAKE = () => {};

/**
 * One replay connection (docs/TIME-MACHINE.md §1). The first subscription that names an asset starts the
 * replay clock at `from`; every later subscribe or unsubscribe restarts the store read from the current position
 * with the new set of assets (exact: see ReplayPosition), after sending the new assets' books at the
 * replay clock. One loop sends: it waits for the next message's wall time (`speed`), for the socket
 * to drain (back-pressure), or for a client message, whichever comes first.
 */
export class ReplaySession {
  /** Subscribed assets → the replay clock when they subscribed: their book then holds every event up to it. */
  private readonly subscribed = new Map<string, number>();
  /**
   * The assets the client asked for, counting the messages not applied yet (the 500 limit applies on
   * receipt). The loop applies the difference from `subscribed`, so however many messages a client
   * sends before the loop gets to them, what waits is one set of at most MAX_ASSETS ids.
   */
  private readonly requested = new Set<string>();
  private changed = false;
  private customChanged = false;
  /**
   * A subscription asked for `custom_feature_enabled`: best_bid_ask, new_market and market_resolved are
   * sent too, from the read that the subscription restarts on (it stays on for the connection).
   */
  private custom = false;
  private position: ReplayPosition;
  private startedAt = 0;
  private source: { messages: AsyncGenerator<ReplayMessage[]>; abort: AbortController } | null = null;
  /** The source's next batch, asked for and not taken yet (a settled promise once read). */
  private pending: Promise<IteratorResult<ReplayMessage[]>> | null = null;
  /** Messages taken from the source; those from `index` on are not sent yet. */
  private batch: ReplayMessage[] = [];
  private index = 0;
  private wake: () => void = NOTHING_TO_WAKE;
  private closed = false;
  /**
   * At `max` a client that keeps up is sent batch after batch as microtasks: a whole read window
   * (tens of thousands of messages, hundreds of ms) before the loop saw a socket again. Every few ms
   * the session waits for a turn instead (src/event-loop.ts; issue 35: /healthz behind replays).
   */
  private readonly breaks = new LoopBreaks();
  /** Aborted when the connection ends: cancels book reads in flight. */
  private readonly lifetime = new AbortController();

  constructor(
    private readonly ws: WebSocket,
    private readonly params: ReplayParams,
    private readonly deps: SessionDeps,
  ) {
    this.position = { t: params.from, seq: Infinity, tied: new Set() };
    ws.on('message', (data, isBinary) => this.onMessage(isBinary ? null : data.toString()));
    ws.on('close', () => this.stop());
    ws.on('error', () => this.stop());
  }

  /** The client is behind: its messages are not read until the socket takes what it holds (send). */
  get paused(): boolean {
    return this.ws.isPaused;
  }

  /** Bytes queued on the socket that the client has not taken yet. */
  get unsentBytes(): number {
    return this.ws.bufferedAmount;
  }

  /** Runs until the replay completes or the connection ends; never throws. */
  async run(): Promise<void> {
    try {
      await this.loop();
    } catch (err) {
      if (this.closed) return;
      log.error('replay failed', { request_id: this.deps.requestId, error: errorText(err, 'stack') });
      this.close(1011, 'replay failed: the store could not be read; retry later');
    } finally {
      this.stopSource();
    }
  }

  private onMessage(text: string | null): void {
    if (this.closed) return;
    const msg = text === null ? ({ kind: 'bad', reason: 'binary messages are not accepted' } as const) : parseClientMessage(text);
    if (msg.kind === 'ping') {
      void this.send('PONG');
      return;
    }
    if (msg.kind === 'bad') return this.close(1008, msg.reason);
    if (msg.kind === 'subscribe') {
      if (msg.custom && !this.custom) {
        this.custom = true;
        // The read restarts with the custom events even when the assets are unchanged.
        this.customChanged = true;
      }
      msg.assets.forEach((a) => this.requested.add(a));
      if (this.requested.size > MAX_ASSETS) return this.close(1008, `too many assets: at most ${MAX_ASSETS} per connection`);
    } else {
      msg.assets.forEach((a) => this.requested.delete(a));
    }
    this.changed = true;
    this.wake();
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      if (this.changed) {
        await this.applySubscriptions();
        continue;
      }
      // Before the first asset (clients may open with an empty subscription) the clock stands at `from`.
      if (!this.startedAt) {
        await this.interruptible(new Promise<never>(() => {}));
        continue;
      }
      if (this.breaks.due()) await this.breaks.turn();
      if (this.index < this.batch.length) {
        await this.sendBatch();
        continue;
      }
      this.pending ??= this.source ? this.source.messages.next() : Promise.resolve({ done: true, value: undefined });
      const next = await this.interruptible(this.pending);
      if (next === WOKEN) continue;
      if (next.done) {
        // Every event is out; the connection lives on until the clock reaches `to` (a subscription
        // may still come), then closes.
        if ((await this.interruptible(this.sleepUntil(this.params.to))) === WOKEN) continue;
        return this.close(1000, 'replay complete');
      }
      this.pending = null;
      this.batch = next.value;
      this.index = 0;
    }
  }

  /**
   * Sends the batch's messages, each at its wall time, until one must wait for the clock or for the
   * client to take what the socket holds (then waits, and returns), or a client message needs the
   * loop. The frames one synchronous run writes go to the socket in one write (corked).
   */
  private async sendBatch(): Promise<void> {
    // ws has no cork of its own: its `_socket` is the connection's net.Socket.
    const socket = (this.ws as unknown as { _socket?: Socket })._socket;
    socket?.cork();
    try {
      while (this.index < this.batch.length && !this.changed && !this.closed) {
        const message = this.batch[this.index];
        const delay = this.delayUntil(message.ms);
        if (delay > 0) {
          socket?.uncork();
          await this.interruptible(this.sleep(delay));
          return;
        }
        this.index++;
        this.advance(message);
        const behind = this.send(message.text);
        if (!behind) continue;
        // The client is behind: wait until this message has left, so the buffer never grows past
        // here (the end of the connection interrupts the wait).
        socket?.uncork();
        await this.interruptible(behind);
        return;
      }
    } finally {
      if (socket?.writableCorked) socket.uncork();
    }
  }

  /** Applies the subscription changes at the current clock (`requested` − `subscribed`), then restarts the read. */
  private async applySubscriptions(): Promise<void> {
    this.changed = false;
    const clock = this.clock();
    const removed = [...this.subscribed.keys()].filter((asset) => !this.requested.has(asset));
    const added = [...this.requested].filter((asset) => !this.subscribed.has(asset));
    const custom = this.customChanged;
    this.customChanged = false;
    // Messages that cancel out (subscribe then unsubscribe before the loop ran) change nothing.
    if (!removed.length && !added.length && !custom) return;
    for (const asset of removed) this.subscribed.delete(asset);
    for (const asset of added) this.subscribed.set(asset, clock);
    this.stopSource();
    // The read starts now, so it runs while the books are read.
    if (this.subscribed.size) this.startSource();
    if (!added.length) return;
    const books = await this.booksAt(added, clock);
    if (this.closed) return;
    const behind = this.send(bookArray(books));
    if (behind) await this.interruptible(behind);
    if (this.startedAt) return;
    // The replay clock starts once the first books are out and the first events are read, so neither
    // the book reads nor the first read's latency delays the events that follow `from` closely.
    if (this.pending) await this.interruptible(this.pending);
    this.startedAt = performance.now();
  }

  /** A read of the subscribed assets from the current position, resuming exactly (see ReplayPosition). */
  private startSource(): void {
    const abort = new AbortController();
    // A copy: every change of the set restarts the read, so this one reads exactly these assets.
    const subscribed = new Map(this.subscribed);
    const { t, seq, tied } = this.position;
    const wanted = (r: ReplayRow) => {
      // Events up to the clock of an asset's subscription are in the book it got then.
      if (r[0] <= subscribed.get(r[3])!) return false;
      return r[0] > t || r[1] > seq || (r[1] === seq && !tied.has(r[3]));
    };
    const messages = replayMessages(
      this.deps.engine,
      { assets: [...subscribed.keys()], since: t, to: this.params.to, custom: this.custom, wanted },
      abort.signal,
    );
    this.source = { messages, abort };
    this.pending = messages.next();
    // Awaited later; a failure before then must not count as unhandled (the loop still sees it).
    this.pending.catch(() => {});
  }

  /** The subscribed books at `clock` that exist, as wire `book`s (a few engine reads at a time). */
  private async booksAt(assets: string[], clock: number): Promise<string[]> {
    const out: (string | null)[] = new Array(assets.length).fill(null);
    let next = 0;
    const worker = async () => {
      while (next < assets.length && !this.closed) {
        const i = next++;
        const state = await this.deps.books.at(assets[i], clock, this.lifetime.signal);
        if (state) out[i] = bookOfState(assets[i], state);
      }
    };
    await Promise.all(Array.from({ length: Math.min(BOOK_READS, assets.length) }, worker));
    return out.filter((b) => b !== null);
  }

  /**
   * The replay clock: where `speed` has brought the wall clock, but never before the last message
   * sent nor at or past a message waiting to be sent; at `max`, the last message sent.
   */
  private clock(): number {
    const { from, to, speed } = this.params;
    if (!this.startedAt || speed === Infinity) return this.position.t;
    let clock = Math.min(to, Math.floor(from + (performance.now() - this.startedAt) * speed));
    if (this.index < this.batch.length) clock = Math.min(clock, this.batch[this.index].ms - 1);
    return Math.max(clock, this.position.t);
  }

  /** Moves the position past a message about to be sent, and counts its events. */
  private advance(message: ReplayMessage): void {
    const p = this.position;
    if (message.ms !== p.t || message.seq !== p.seq) p.tied.clear();
    p.t = message.ms;
    p.seq = message.seq;
    message.assets.forEach((a) => p.tied.add(a));
    this.deps.onEvents(message.events);
  }

  /** Wall ms until replay instant `ms` (≤ 0: now; always at `max`). */
  private delayUntil(ms: number): number {
    const { from, speed } = this.params;
    if (speed === Infinity) return 0;
    return this.startedAt + (ms - from) / speed - performance.now();
  }

  /** Resolves at the wall time of replay instant `ms` (at once at `max`); a wake cancels the timer. */
  private sleepUntil(ms: number): Promise<void> {
    const delay = this.delayUntil(ms);
    return delay > 0 ? this.sleep(delay) : Promise.resolve();
  }

  private sleep(delay: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, delay);
      this.cancelSleep = () => clearTimeout(timer);
    });
  }

  private cancelSleep: () => void = () => {};

  /** `p`, or WOKEN as soon as a client message or the end of the connection needs the loop. */
  private interruptible<T>(p: Promise<T>): Promise<T | typeof WOKEN> {
    return new Promise((resolve, reject) => {
      const wake = () => {
        this.wake = NOTHING_TO_WAKE;
        this.cancelSleep();
        resolve(WOKEN);
      };
      this.wake = wake;
      const settled = () => {
        // A later wait may own the handler by now: clear only this one's.
        if (this.wake === wake) this.wake = NOTHING_TO_WAKE;
      };
      p.then(
        (v) => {
          settled();
          resolve(v);
        },
        (err) => {
          settled();
          reject(err);
        },
      );
    });
  }

  /**
   * The one way a frame leaves. Below HIGH_WATER it is queued on the socket; at or above it the
   * frame still goes (it is already made) but the client's messages stop being read (`pause`) until
   * the socket has taken it, and the promise returned resolves then. So a client that sends without
   * reading (subscription churn, PING floods) fills its own socket buffers, never this process.
   */
  private send(text: string): Promise<void> | undefined {
    // The connection is going (ws emits 'close' once its receiver has run to the end): nothing
    // more is sent or read from the store.
    if (this.ws.readyState !== this.ws.OPEN) {
      this.stop();
      return undefined;
    }
    if (this.ws.bufferedAmount < HIGH_WATER) {
      this.ws.send(text);
      return undefined;
    }
    this.ws.pause();
    return new Promise((resolve) =>
      this.ws.send(text, (err) => {
        // Resumed on a failed send too: ws emits 'close' only once its receiver, paused here, has
        // run to the end.
        if (err || this.ws.bufferedAmount < HIGH_WATER) this.ws.resume();
        resolve();
      }),
    );
  }

  private stopSource(): void {
    if (!this.source) return;
    this.source.abort.abort();
    void this.source.messages.return(undefined).catch(() => {});
    this.source = null;
    this.pending = null;
    this.batch = [];
    this.index = 0;
  }

  private close(code: number, reason: string): void {
    if (this.closed) return;
    this.ws.close(code, reason);
    this.stop();
  }

  private stop(): void {
    if (this.closed) return;
    this.closed = true;
    this.lifetime.abort();
    this.wake();
    this.stopSource();
  }
}
