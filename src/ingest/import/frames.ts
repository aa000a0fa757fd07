import { CAPTURE_EVENT_TYPE, captureLine } from '../capture-record.js';
import { openDecompressed } from '../compressed-files.js';
import { lineBatches } from '../lines.js';
import { receiveTimeOf } from '../receive-time.js';
import { spanLines } from './coverage-lines.js';
import type { ImportProblem } from './problems.js';

export interface LinesContext {
  report: (p: ImportProblem) => void;
  /** Input bytes of the unit read so far (progress). */
  onBytes: (bytes: number) => void;
  /** The assets of the lines taken so far (the normalizer's: the consumer has processed every line yielded before). */
  assets: () => Iterable<string>;
}

/** A capture record line as captureLine writes it (its first member is always the event type). */
const CAPTURE_PREFIX = `{"event_type":"${CAPTURE_EVENT_TYPE}"`;

/** Whether a line starts with a digit: a receive time (receive-time.ts), read only where coverage needs one. */
const stamped = (line: string) => line.charCodeAt(0) >= 0x30 && line.charCodeAt(0) <= 0x39;

/**
 * Frame files (docs/INGEST.md §3, §6.1): one market-channel frame per line, optionally after its
 * receive time, e.g. polydata5's captures or a Tardis data-feeds slice. Lines pass through as they
 * are, one for one, so the normalizer's malformed line numbers are the file's; a line longer than the
 * reader keeps (MAX_LINE_BYTES) is reported with its byte offset and passes as a malformed one.
 *
 * Coverage: a file with receive times and no capture records of its own (a recorder's archive has
 * them) is a run from its first to its last receive time with every asset it names live; an empty
 * line, which Tardis writes for a disconnect, becomes a `close` of the assets seen so far, and the
 * next stamped frame reopens them. Receive times are read only of the lines that bound these spans (the
 * normalizer reads every line's), and the assets are the normalizer's: lines are yielded up to an empty
 * one before its `close` is made.
 */
export async function* frameLines(path: string, sourceId: string, ctx: LinesContext): AsyncGenerator<string[]> {
  const { chunks, raw } = await openDecompressed(path);
  const run = `import-${sourceId}`;
  const sorted = () => [...ctx.assets()].sort();
  let first = -1;
  /** The last line with a receive time, read when it bounds a span. */
  let lastStamped = '';
  let last = -1;
  let ownRecords = false;
  let disconnected = false;
  const reopens: number[] = [];
  const timeOf = (line: string) => {
    const us = receiveTimeOf(line);
    return us === undefined || Number.isNaN(us) ? -1 : Math.floor(us / 1000);
  };
  const lastTime = () => {
    const t = lastStamped === '' ? -1 : timeOf(lastStamped);
    if (t >= 0) last = t;
    return last;
  };
  for await (const batch of lineBatches(chunks, { onOverlong: overlong(path, ctx) })) {
    ctx.onBytes(raw.bytesRead);
    let out: string[] = [];
    for (const line of batch) {
      if (stamped(line)) {
        if (first < 0) first = timeOf(line);
        if (disconnected) {
          const t = timeOf(line);
          if (t >= 0) {
            reopens.push(t);
            disconnected = false;
          }
        }
        lastStamped = line;
      } else if (line === '' && first >= 0 && !disconnected && !ownRecords) {
        // The lines before it go through the normalizer first: the close names the assets they named.
        yield out;
        out = [];
        const assets = sorted();
        if (assets.length > 0) {
          disconnected = true;
          out.push(captureLine({ kind: 'close', t: lastTime(), run, socket: 1, assets }));
          continue;
        }
      }
      if (!ownRecords && line.startsWith(CAPTURE_PREFIX)) ownRecords = true;
      out.push(line);
    }
    yield out;
  }
  ctx.onBytes(raw.bytesRead);
  if (ownRecords || first < 0) return;
  const assets = sorted();
  yield [...spanLines(run, first, lastTime() + 1, assets), ...reopens.map((t) => captureLine({ kind: 'open', t, run, socket: 1, assets }))];
}

/** A file's lines as they are (a recorder's archive). */
export async function* plainLines(path: string, ctx: LinesContext): AsyncGenerator<string[]> {
  const { chunks, raw } = await openDecompressed(path);
  for await (const batch of lineBatches(chunks, { onOverlong: overlong(path, ctx) })) {
    ctx.onBytes(raw.bytesRead);
    yield batch;
  }
  ctx.onBytes(raw.bytesRead);
}

const overlong = (path: string, ctx: LinesContext) => (line: number, offset: number) =>
  ctx.report({ file: path, where: `line ${line}`, message: `longer than 64 MiB (from byte ${offset}): not read, the lines after it are` });
