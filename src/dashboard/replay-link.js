/**
 * "Replay from here": the replay WebSocket's URL (docs/TIME-MACHINE.md §1) from the order book's time to
 * the asset's last tick, with the signed-in key as `key` (bots often cannot set headers). A browser
 * cannot open a ws:// link: it is there to copy into a Polymarket bot (README, "Replay").
 */
import { session, url } from './api.js';
import { h } from './dom.js';

export function replayLink({ from, to }) {
  const el = h(
    'a',
    { class: 'replay-link', 'data-testid': 'replay-link', title: 'WebSocket URL for a Polymarket market-channel client: copy it into your bot' },
    'Replay from here',
  );
  const setTime = (ms) => {
    const target = new URL(url('/v1/replay/market', { from: ms, to: Math.max(ms, to), key: session.key }), location.href);
    target.protocol = target.protocol === 'https:' ? 'wss:' : 'ws:';
    el.href = target.href;
  };
  setTime(from);
  return { el, setTime };
}
