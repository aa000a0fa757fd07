import type { Engine } from '../clickhouse/engine.js';
import { disconnectTimes } from '../queries/disconnects.js';
import { replayMessages } from './store-read.js';
import type { ReplayRow } from './wire.js';

/**
 * The body of a Tardis HTTP replay slice (docs/TARDIS.md §2): the messages the replay WebSocket sends
 * for the same assets and times (replayMessages: Polymarket's shapes, (t, arrival) order, a
 * `price_change` per market and millisecond), each on a line `<local timestamp> <message JSON>`, and
 * an empty line where the recorder lost its connection to one of the assets. The local timestamp is
 * the message's receive time as Tardis writes it: ISO 8601 UTC with 7 decimals and `Z`, 28
 * characters, which the Tardis clients cut at a fixed index.
 */
export interface FeedSlice {
  /** Every asset a filter names. */
  assets: string[];
  /** Whether a stored event goes out: its channel (event type) was asked for its asset. */
  wanted: (row: ReplayRow) => boolean;
  /** The slice, [lo, hi) in Unix ms. */
  lo: number;
  hi: number;
}

/** `YYYY-MM-DDTHH:MM:SS.fffffffZ ` for a receive time in Unix ms (the 7th decimal and the µs below ms are 0 until receive times are stored in µs). */
export function localTimePrefix(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 23)}0000Z `;
}

export async function* feedChunks(engine: Engine, slice: FeedSlice, signal: AbortSignal): AsyncGenerator<Buffer> {
  const closes = await disconnectTimes(engine, { assets: slice.assets, lo: slice.lo, hi: slice.hi }, signal);
  let nextClose = 0;
  // The last prefix made: messages of one millisecond share it.
  let prefixMs = Number.NaN;
  let prefix = '';
  const messages = replayMessages(engine, { assets: slice.assets, since: slice.lo, to: slice.hi - 1, wanted: slice.wanted }, signal);
  for await (const batch of messages) {
    let text = '';
    for (const m of batch) {
      // A loss before this message: its empty line comes first (one at a time: the clients fold repeats).
      while (nextClose < closes.length && closes[nextClose] < m.ms) {
        text += '\n';
        nextClose++;
      }
      if (m.ms !== prefixMs) {
        prefixMs = m.ms;
        prefix = localTimePrefix(m.ms);
      }
      text += `${prefix}${m.text}\n`;
    }
    yield Buffer.from(text);
  }
  if (nextClose < closes.length) yield Buffer.from('\n'.repeat(closes.length - nextClose));
}
