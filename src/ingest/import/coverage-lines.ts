import { CAPTURE_EVENT_TYPE, type CaptureRecord, captureLine } from '../capture-record.js';

/**
 * Capture records for imported archives (docs/INGEST.md §6.4), as archive lines the normalizer
 * stores like a recorder's: an archive file that covers [from, to) is a run of its own with every
 * asset seen in it live on socket 1; a span of the import range without a file is `source_missing`.
 */

/** A file's span: start, each asset subscribed and open at `from`, stop at `to`. */
export function spanLines(run: string, from: number, to: number, assets: Iterable<string>): string[] {
  const list = [...assets].sort();
  const lines = [captureLine({ kind: 'start', t: from, run, socket: 0, assets: [] })];
  if (list.length > 0) {
    lines.push(captureLine({ kind: 'subscribe', t: from, run, socket: 1, assets: list }));
    lines.push(captureLine({ kind: 'open', t: from, run, socket: 1, assets: list }));
  }
  lines.push(captureLine({ kind: 'stop', t: to, run, socket: 0, assets: [] }));
  return lines;
}

/** A span the source has no file for. */
export function missingLines(run: string, from: number, to: number): string[] {
  return [captureLine({ kind: 'source_missing', t: from, run, socket: 0, assets: [] }), captureLine({ kind: 'stop', t: to, run, socket: 0, assets: [] })];
}

/** One record on its own (a disconnect inside a frames file). */
export function recordLine(r: CaptureRecord): string {
  return captureLine(r);
}

/** Whether a frame line is a capture record (a recorder's archive has its own). */
export function isCaptureLine(line: string): boolean {
  return line.includes(`"event_type":"${CAPTURE_EVENT_TYPE}"`);
}

/**
 * The units (hours or days, `step` ms) in [from, to) that no file covers, as [start, end) runs of
 * consecutive missing units.
 */
export function missingSpans(present: readonly number[], from: number, to: number, step: number): [number, number][] {
  const have = new Set(present);
  const out: [number, number][] = [];
  for (let t = from; t < to; t += step) {
    if (have.has(t)) continue;
    const last = out.at(-1);
    if (last && last[1] === t) last[1] = t + step;
    else out.push([t, t + step]);
  }
  return out;
}
