/**
 * When the ingester stores a checkpoint (a snapshot of its own in-memory book, docs/INGEST.md §2) of a
 * grounded book: after `changes` price_change items or `ms` of event time since its last snapshot.
 * Checkpoints never change an answer; they bound how far back a reconstruction reads.
 */
export interface CheckpointPolicy {
  changes: number;
  ms: number;
}

/**
 * 200 changes bound what one reconstruction reads; the hourly rule only refreshes slow assets. (A
 * 60 s rule made a checkpoint every ~14 changes on sparse assets: 50k snapshot rows for 300k ticks.)
 */
export const DEFAULT_CHECKPOINTS: CheckpointPolicy = { changes: 200, ms: 3_600_000 };
