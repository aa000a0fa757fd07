import { type CaptureRecord, captureLine } from '../ingest/capture-record.js';
import { DAY, utcMidnight } from '../time.js';

/**
 * The demo's capture records: a recorder's life told in the records it writes into its archive
 * (docs/TIME-MACHINE.md §4), woven into the demo frames, so a fresh demo shows every coverage condition
 * on every asset (docs/guides/recorder.md, "Coverage"):
 *
 * - day 1 (the demo's first UTC day, partial): no capture record, as for data from another file: `unknown`;
 * - day 2: a recorder run starts at 00:00 and subscribes each market on a socket of its own, which
 *   cannot connect all day: `missing` (gap `disconnected`);
 * - day 3: the sockets open at 00:00; at 10:00 (one market after the other, 7 minutes apart) each
 *   socket drops and comes back with its market's next `book` at least 20 minutes later. The frames
 *   in between never arrived (they are left out), so the book after the reconnect, its re-sync, no
 *   longer matches the book rebuilt without them: a reconnect, a gap and a drifted book: `degraded`;
 * - today: captured up to now (the run never stopped): `available`.
 *
 * Frames of other times pass through unchanged. The demo spans at least three days (generateDemo's
 * default); its first frame (the initial dump) comes before all of this.
 */
export const STORY_RUN = 'demo-recorder';
/** When, after 00:00 UTC of the third day, the first market's socket drops; the next ones follow. */
const DROP_AT = 10 * 3_600_000;
const DROP_STAGGER = 7 * 60_000;
/** The shortest outage: the socket reopens with the market's first book this long after the drop. */
const MIN_OUTAGE = 20 * 60_000;

interface MarketSocket {
  socket: number;
  assets: string[];
  state: 'waiting' | 'connected' | 'dropped' | 'resynced';
  dropAt: number;
}

/** The demo's markets as the story needs them: condition id and the two token ids. */
export interface StoryMarket {
  conditionId: string;
  tokens: string[];
}

export function* withCaptureStory(frames: Iterable<string>, markets: readonly StoryMarket[], startMs: number, endMs: number): Generator<string> {
  const day2 = utcMidnight(startMs) + DAY;
  const day3 = day2 + DAY;
  if (endMs < day3 + DAY) throw new RangeError('the capture story needs a demo that reaches a fourth UTC day');
  const sockets = new Map<string, MarketSocket>(
    markets.map((m, i) => [m.conditionId, { socket: i + 1, assets: [...m.tokens], state: 'waiting', dropAt: day3 + DROP_AT + i * DROP_STAGGER }]),
  );
  const record = (kind: CaptureRecord['kind'], t: number, s?: MarketSocket) =>
    captureLine({ kind, t, run: STORY_RUN, socket: s?.socket ?? 0, assets: s ? s.assets : [] });
  let started = false;
  let opened = false;

  for (const line of frames) {
    const t = frameTime(line);
    if (t === null) {
      yield line;
      continue;
    }
    if (!started && t >= day2) {
      started = true;
      yield record('start', day2);
      for (const s of sockets.values()) yield record('subscribe', day2, s);
    }
    if (!opened && t >= day3) {
      opened = true;
      for (const s of sockets.values()) {
        s.state = 'connected';
        yield record('open', day3, s);
      }
    }
    const s = sockets.get(frameMarket(line) ?? '');
    if (s?.state === 'connected' && t >= s.dropAt) {
      s.state = 'dropped';
      yield record('close', s.dropAt, s);
    }
    if (s?.state === 'dropped') {
      // Lost while disconnected, until the market's book arrives on the new connection.
      if (t < s.dropAt + MIN_OUTAGE || !line.includes('"event_type":"book"')) continue;
      s.state = 'resynced';
      yield record('open', t, s);
      yield record('resync', t, s);
    }
    yield line;
  }
}

/** The frame's `timestamp` (every demo frame has one), or null for a line without it. */
function frameTime(line: string): number | null {
  const at = line.indexOf('"timestamp":"');
  if (at < 0) return null;
  const from = at + 13;
  const to = line.indexOf('"', from);
  const t = Number(line.slice(from, to));
  return Number.isSafeInteger(t) ? t : null;
}

function frameMarket(line: string): string | null {
  const at = line.indexOf('"market":"');
  if (at < 0) return null;
  return line.slice(at + 10, line.indexOf('"', at + 10));
}
