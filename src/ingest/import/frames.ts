import { splitLines } from '../../clickhouse/lines.js';
import { CAPTURE_EVENT_TYPE } from '../capture-record.js';
import { receiveTimeOf } from '../receive-time.js';
import { recordLine, spanLines } from './coverage-lines.js';
import type { ImportProblem } from './problems.js';
import { openDecompressed } from './sources.js';

export interface LinesContext {
  report: (p: ImportProblem) => void;
  /** Input bytes of the unit read so far (progress). */
  onBytes: (bytes: number) => void;
}

/** A capture record line as captureLine writes it (its first member is always the event type). */
const CAPTURE_PREFIX = `{"event_type":"${CAPTURE_EVENT_TYPE}"`;
const ASSET_KEY = '"asset_id":"';

/**
 * Frame files (docs/INGEST.md §3, §6.1): one market-channel frame per line, optionally after its
 * receive time, e.g. polydata5's captures or a Tardis data-feeds slice. Lines pass through as they
 * are, one for one, so the normalizer's malformed line numbers are the file's; a line longer than the
 * reader keeps (MAX_LINE_BYTES) is reported with its byte offset and passes as a malformed one.
 *
 * Coverage: a file with receive times and no capture records of its own (a recorder's archive has
 * them) is a run from its first to its last receive time with every asset it names live; an empty
 * line, which Tardis writes for a disconnect, becomes a `close` of the assets seen so far, and the
 * next stamped frame reopens them.
 */
export async function* frameLines(path: string, sourceId: string, ctx: LinesContext): AsyncGenerator<string> {
  const { chunks, raw } = await openDecompressed(path);
  const run = `import-${sourceId}`;
  const assets = new Set<string>();
  let first = -1;
  let last = -1;
  let ownRecords = false;
  let disconnected = false;
  const reopens: number[] = [];
  let n = 0;
  for await (const line of splitLines(chunks, { onOverlong: overlong(path, ctx) })) {
    if ((++n & 4095) === 0) ctx.onBytes(raw.bytesRead);
    const stamp = receiveTimeOf(line);
    if (stamp !== undefined && !Number.isNaN(stamp)) {
      const ms = Math.floor(stamp / 1000);
      if (first < 0) first = ms;
      last = ms;
      if (disconnected) reopens.push(ms);
      disconnected = false;
      addAssets(line, assets);
    } else if (line === '' && first >= 0 && !disconnected && !ownRecords && assets.size > 0) {
      disconnected = true;
      yield recordLine({ kind: 'close', t: last, run, socket: 1, assets: [...assets].sort() });
      continue;
    }
    if (!ownRecords && line.startsWith(CAPTURE_PREFIX)) ownRecords = true;
    yield line;
  }
  ctx.onBytes(raw.bytesRead);
  if (ownRecords || first < 0) return;
  yield* spanLines(run, first, last + 1, assets);
  for (const t of reopens) yield recordLine({ kind: 'open', t, run, socket: 1, assets: [...assets].sort() });
}

/** The asset ids a frame names (`"asset_id":"…"`); consecutive frames mostly name the same few. */
function addAssets(line: string, assets: Set<string>): void {
  for (let at = line.indexOf(ASSET_KEY); at !== -1; at = line.indexOf(ASSET_KEY, at)) {
    at += ASSET_KEY.length;
    const end = line.indexOf('"', at);
    if (end < 0) return;
    assets.add(line.slice(at, end));
    at = end;
  }
}

/** A file's lines as they are (a recorder's archive). */
export async function* plainLines(path: string, ctx: LinesContext): AsyncGenerator<string> {
  const { chunks, raw } = await openDecompressed(path);
  let n = 0;
  for await (const line of splitLines(chunks, { onOverlong: overlong(path, ctx) })) {
    if ((++n & 4095) === 0) ctx.onBytes(raw.bytesRead);
    yield line;
  }
  ctx.onBytes(raw.bytesRead);
}

const overlong = (path: string, ctx: LinesContext) => (line: number, offset: number) =>
  ctx.report({ file: path, where: `line ${line}`, message: `longer than 64 MiB (from byte ${offset}): not read, the lines after it are` });
