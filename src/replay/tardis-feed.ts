import type { Engine } from '../clickhouse/engine.js';
import { receiveTimePrefix } from '../ingest/receive-time.js';
import { disconnectTimes } from '../queries/disconnects.js';
import { replayMessages } from './store-read.js';
import type { ReplayRow } from './wire.js';

/**
 * The body of a Tardis HTTP replay slice (docs/TARDIS.md §2): the messages the replay WebSocket sends
 * for the same assets and times (replayMessages: Polymarket's shapes, (t, arrival) order, a
 * `price_change` per market and millisecond), each on a line `<local timestamp> <message JSON>`, and
 * an empty line where the recorder lost its connection to one of the assets. The local timestamp is
 * the message's receive time (local_t) as Tardis writes it: ISO 8601 UTC with 7 decimals and `Z`, 28
 * characters, which the Tardis clients cut at a fixed index — the frame-file line format's prefix
 * (src/ingest/receive-time.ts), shared.
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

export async function* feedChunks(engine: Engine, slice: FeedSlice, signal: AbortSignal): AsyncGenerator<Buffer> {
  // Read beside the messages, not before them: engine round trips taken one after another add up in
  // every slice's time, and tardis_dev.replay waits for whole slices.
  const losses = disconnectTimes(engine, { assets: slice.assets, lo: slice.lo, hi: slice.hi }, signal);
  // Settled below, before the first batch or after the read failed: never an unhandled rejection.
  losses.catch(() => {});
  let closes: number[] | null = null;
  let nextClose = 0;
  // The last prefix made: the messages of one frame share it.
  let prefixUs = Number.NaN;
  let prefix = '';
  // custom: every market event tickhouse stores goes out when its channel is asked (Tardis records with
  // custom_feature_enabled, docs/TARDIS.md §2).
  const read = { assets: slice.assets, since: slice.lo, to: slice.hi - 1, custom: true, wanted: slice.wanted, firstWindowMs: slice.hi - slice.lo };
  const messages = replayMessages(engine, read, signal);
  for await (const batch of messages) {
    closes ??= await losses;
    let text = '';
    for (const m of batch) {
      // A loss before this message: its empty line comes first (one at a time: the clients fold repeats).
      while (nextClose < closes.length && closes[nextClose] < m.ms) {
        text += '\n';
        nextClose++;
      }
      if (m.localUs !== prefixUs) {
        prefixUs = m.localUs;
        prefix = receiveTimePrefix(m.localUs);
      }
      text += `${prefix}${m.text}\n`;
    }
    yield Buffer.from(text);
  }
  closes ??= await losses;
  if (nextClose < closes.length) yield Buffer.from('\n'.repeat(closes.length - nextClose));
}
