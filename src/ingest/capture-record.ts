import type { CaptureKind } from '../clickhouse/rows.js';

/**
 * The recorder's capture records as archive lines (docs/TIME-MACHINE.md §4): one JSON object per line
 * among the raw frames, so replaying an archive restores the records with the data. The
 * `event_type` is one Polymarket never sends; the normalizer recognises it before anything else.
 */
export const CAPTURE_EVENT_TYPE = 'tickhouse_capture';

export interface CaptureRecord {
  kind: CaptureKind;
  /** Wall-clock time of the record, Unix ms. */
  t: number;
  run: string;
  /** 1-based socket number within the run; 0 for run records (RUN_KINDS). */
  socket: number;
  /** The assets it concerns; empty for run records. */
  assets: string[];
}

const KINDS: readonly CaptureKind[] = ['start', 'stop', 'subscribe', 'open', 'close', 'resync', 'source_missing', 'unsubscribe'];

/** Records of a whole run (or of a span an archive lacks): they name no asset. */
export const RUN_KINDS: readonly CaptureKind[] = ['start', 'stop', 'source_missing'];

export function captureLine(r: CaptureRecord): string {
  return JSON.stringify({ event_type: CAPTURE_EVENT_TYPE, kind: r.kind, t: r.t, run: r.run, socket: r.socket, assets: r.assets });
}

/** The record an archive line holds, or null when a field is missing or of the wrong type. */
export function parseCaptureRecord(e: Record<string, unknown>): CaptureRecord | null {
  const { kind, t, run, socket, assets } = e;
  if (!KINDS.includes(kind as CaptureKind) || !Number.isSafeInteger(t) || (t as number) < 0) return null;
  if (typeof run !== 'string' || run === '' || !Number.isSafeInteger(socket) || (socket as number) < 0) return null;
  if (!Array.isArray(assets) || !assets.every((a) => typeof a === 'string' && a !== '')) return null;
  // Run records name no asset; every other record names at least one.
  if (RUN_KINDS.includes(kind as CaptureKind) !== (assets.length === 0)) return null;
  return { kind: kind as CaptureKind, t: t as number, run, socket: socket as number, assets: assets as string[] };
}
