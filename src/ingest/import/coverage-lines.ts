import { type CaptureRecord, captureLine } from '../capture-record.js';

/**
 * Capture records of a frames file (docs/INGEST.md §6.1), as archive lines the normalizer stores like
 * a recorder's: the file's receive times are a run of its own with every asset it names live on socket 1.
 * (The engine units of pmxt and Tardis write theirs as rows: engine-unit.ts.)
 */

/** A span: start, each asset subscribed and open at `from`, stop at `to`. */
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
