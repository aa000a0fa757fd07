import { splitLines } from '../../clickhouse/lines.js';
import { receiveTimeOf } from '../receive-time.js';
import { isCaptureLine, recordLine, spanLines } from './coverage-lines.js';
import { openDecompressed } from './sources.js';

/**
 * Frame files (docs/INGEST.md §3, §6.1): one market-channel frame per line, optionally after its
 * receive time, e.g. polydata5's captures or a Tardis data-feeds slice. Lines pass through as they
 * are, one for one, so the normalizer's malformed line numbers are the file's.
 *
 * Coverage: a file with receive times and no capture records of its own (a recorder's archive has
 * them) is a run from its first to its last receive time with every asset it names live; an empty
 * line, which Tardis writes for a disconnect, becomes a `close` of the assets seen so far, and the
 * next stamped frame reopens them.
 */
export async function* frameLines(path: string, sourceId: string, onBytes: (bytes: number) => void): AsyncGenerator<string> {
  const { chunks, raw } = await openDecompressed(path);
  const run = `import-${sourceId}`;
  const assets = new Set<string>();
  let first = -1;
  let last = -1;
  let ownRecords = false;
  let disconnected = false;
  const reopens: number[] = [];
  let n = 0;
  for await (const line of splitLines(chunks)) {
    if ((++n & 4095) === 0) onBytes(raw.bytesRead);
    const stamp = receiveTimeOf(line);
    if (stamp !== undefined && !Number.isNaN(stamp)) {
      const ms = Math.floor(stamp / 1000);
      if (first < 0) first = ms;
      last = ms;
      if (disconnected) reopens.push(ms);
      disconnected = false;
      for (const m of line.matchAll(/"asset_id":"([^"]+)"/g)) assets.add(m[1]);
    } else if (line === '' && first >= 0 && !disconnected && !ownRecords && assets.size > 0) {
      disconnected = true;
      yield recordLine({ kind: 'close', t: last, run, socket: 1, assets: [...assets].sort() });
      continue;
    }
    if (!ownRecords && isCaptureLine(line)) ownRecords = true;
    yield line;
  }
  onBytes(raw.bytesRead);
  if (ownRecords || first < 0) return;
  yield* spanLines(run, first, last + 1, assets);
  for (const t of reopens) yield recordLine({ kind: 'open', t, run, socket: 1, assets: [...assets].sort() });
}

/** A file's lines as they are (a recorder's archive). */
export async function* plainLines(path: string, onBytes: (bytes: number) => void): AsyncGenerator<string> {
  const { chunks, raw } = await openDecompressed(path);
  let n = 0;
  for await (const line of splitLines(chunks)) {
    if ((++n & 4095) === 0) onBytes(raw.bytesRead);
    yield line;
  }
  onBytes(raw.bytesRead);
}
