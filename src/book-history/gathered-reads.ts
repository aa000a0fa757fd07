/**
 * Requests gathered into shared reads. A read's fixed cost dominates a small one (parsing, planning,
 * opening the part), so requests of one group (an asset) that arrive while `concurrent` reads of the
 * group run wait for the next one, which answers all of them at once (up to `most`); with nothing
 * running, a request is read at once, alone. A request for a key already asked for (the same
 * segment) shares that read.
 *
 * Under 32 clients looking up random instants this is what keeps a miss cheaper than the raw engine's
 * own point read: measured here, one read of 16 segments cost ~15 ms of engine CPU, ~0.9 ms a
 * segment, against ~3.7 ms for a read of one.
 */
export class GatheredReads<K, I, V> {
  private readonly groups = new Map<string, Group<K, I, V>>();
  /** Requests not answered yet, all groups. */
  private open = 0;
  /** Called once when a read ends. */
  private readEnded: (() => void)[] = [];

  /**
   * `read(group, items)` answers the items it was given by key (a map: a key it leaves out gets
   * undefined); a request's item is what the read needs of it (the first request's, for a shared key).
   */
  constructor(
    private readonly read: (group: string, items: I[]) => Promise<Map<K, V>>,
    private readonly concurrent: number,
    private readonly most: number,
  ) {}

  /** Requests waiting for a read or in one. */
  get waiting(): number {
    return this.open;
  }

  /** The value of `key` in `group`, read with the other requests of the group that come meanwhile. */
  get(group: string, key: K, item: I): Promise<V | undefined> {
    let g = this.groups.get(group);
    if (!g) this.groups.set(group, (g = { running: 0, queued: new Map(), reading: new Map() }));
    const shared = g.reading.get(key) ?? g.queued.get(key)?.promise;
    if (shared) return shared;
    let resolve!: (v: V | undefined) => void;
    let reject!: (err: unknown) => void;
    const promise = new Promise<V | undefined>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    g.queued.set(key, { item, promise, resolve, reject });
    this.open++;
    if (g.running < this.concurrent) this.dispatch(group, g);
    return promise;
  }

  /** Resolves at once when no request waits, else when the next read ends: work that yields to requests awaits it between its steps. */
  turn(): Promise<void> {
    if (this.open === 0) return Promise.resolve();
    return new Promise((resolve) => this.readEnded.push(resolve));
  }

  private dispatch(group: string, g: Group<K, I, V>): void {
    const batch = [...g.queued.entries()].slice(0, this.most);
    for (const [key, waiter] of batch) {
      g.queued.delete(key);
      g.reading.set(key, waiter.promise);
    }
    g.running++;
    this.read(
      group,
      batch.map(([, waiter]) => waiter.item),
    )
      .then(
        (values) => {
          for (const [key, waiter] of batch) waiter.resolve(values.get(key));
        },
        (err: unknown) => {
          for (const [, waiter] of batch) waiter.reject(err);
        },
      )
      .finally(() => {
        for (const [key] of batch) g.reading.delete(key);
        this.open -= batch.length;
        g.running--;
        if (g.queued.size > 0) this.dispatch(group, g);
        else if (g.running === 0) this.groups.delete(group);
        const ended = this.readEnded;
        this.readEnded = [];
        for (const resolve of ended) resolve();
      });
  }
}

interface Waiter<I, V> {
  item: I;
  promise: Promise<V | undefined>;
  resolve: (v: V | undefined) => void;
  reject: (err: unknown) => void;
}

interface Group<K, I, V> {
  running: number;
  queued: Map<K, Waiter<I, V>>;
  reading: Map<K, Promise<V | undefined>>;
}
