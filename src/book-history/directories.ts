import type { Engine } from '../clickhouse/engine.js';
import { snapshotTimes } from '../queries/book-segments.js';
import { SnapshotDirectory } from './snapshot-directory.js';

/**
 * The snapshot directories a BookCache holds, least recently used out beyond `budgetBytes` (8 bytes
 * a snapshot: the bench's largest asset, 6 M ticks, takes 450 kB). Loading one is one read of
 * book_snapshot_keys (~6 ms for those 56,400 snapshots), shared by the lookups that wait for it.
 */
export class Directories {
  /** Insertion order is recency. */
  private readonly held = new Map<string, SnapshotDirectory>();
  private readonly loading = new Map<string, Promise<SnapshotDirectory | undefined>>();
  /** Assets whose directory exceeds the budget: their lookups do without one (point reads). */
  private readonly oversized = new Set<string>();
  bytes = 0;

  /** `onGrow`: called after the held directories grew (the cache then makes room among its segments). */
  constructor(
    private readonly engine: Engine,
    private readonly budgetBytes: number,
    private readonly onGrow: () => void,
  ) {}

  get size(): number {
    return this.held.size;
  }

  /** The asset's directory when held, without loading it. */
  peek(assetId: string): SnapshotDirectory | undefined {
    return this.held.get(assetId);
  }

  /** The asset's directory, loaded when not held; undefined when it does not fit the budget. */
  get(assetId: string): Promise<SnapshotDirectory | undefined> {
    const held = this.held.get(assetId);
    if (held) {
      this.held.delete(assetId);
      this.held.set(assetId, held);
      return Promise.resolve(held);
    }
    if (this.oversized.has(assetId)) return Promise.resolve(undefined);
    let loading = this.loading.get(assetId);
    if (!loading) {
      // Not cancelled by a request that leaves: other lookups wait for the same load.
      loading = this.load(assetId).finally(() => this.loading.delete(assetId));
      this.loading.set(assetId, loading);
    }
    return loading;
  }

  /** Adds snapshot times a read found to the asset's directory. */
  learn(directory: SnapshotDirectory, seen: readonly number[]): void {
    if (seen.length === 0 || this.held.get(directory.assetId) !== directory) return;
    const before = directory.bytes;
    directory.learn(seen);
    this.bytes += directory.bytes - before;
    this.fit(directory);
  }

  private async load(assetId: string): Promise<SnapshotDirectory | undefined> {
    const directory = new SnapshotDirectory(assetId, await snapshotTimes(this.engine, assetId, -1));
    if (directory.bytes > this.budgetBytes) {
      // Remembered so its lookups do not read it again; bounded like everything else held.
      if (this.oversized.size >= 10_000) this.oversized.clear();
      this.oversized.add(assetId);
      return undefined;
    }
    this.held.set(assetId, directory);
    this.bytes += directory.bytes;
    this.fit(directory);
    return directory;
  }

  /** Least recently used directories out beyond the budget (never `keep`), then the cache makes room. */
  private fit(keep: SnapshotDirectory): void {
    for (const [id, directory] of this.held) {
      if (this.bytes <= this.budgetBytes) break;
      if (directory === keep) continue;
      this.held.delete(id);
      this.bytes -= directory.bytes;
    }
    this.onGrow();
  }
}
