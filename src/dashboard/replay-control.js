/**
 * "Replay from here": the replay WebSocket's URL (docs/TIME-MACHINE.md §1) for a window that starts at
 * the order book's time, with a speed, to paste into a Polymarket bot (docs/guides/replay.md). A browser
 * cannot open ws://, so the URL is text with a Copy button, never a link: following one showed an error
 * page with the key in the address bar. The field shows the key masked; Copy copies it whole.
 */
import { session, url } from './api.js';
import { field, h } from './dom.js';
import { fmtDuration, fmtTime, maskKey } from './format.js';

const MINUTE = 60_000;
const LENGTHS = [
  [10 * MINUTE, '10 minutes'],
  [60 * MINUTE, '1 hour'],
  [6 * 60 * MINUTE, '6 hours'],
  [24 * 60 * MINUTE, '1 day'],
];
const SPEEDS = [
  ['1', '1× (real time)'],
  ['10', '10×'],
  ['100', '100×'],
  ['1000', '1000×'],
  ['max', 'max (as fast as the bot reads)'],
];
const DEFAULT_LENGTH = 60 * MINUTE;
const DEFAULT_SPEED = '10';
const COPIED_FOR_MS = 2_000;

/**
 * `lo`..`hi`: the asset's readable range. The window is [book time, book time + length] inside it; when
 * that would run past the last tick (the book at "Latest"), it is the last `length` up to the last tick.
 */
export function replayControl({ lo, hi }) {
  let bookTime = hi;
  const length = h(
    'select',
    { 'data-testid': 'replay-length', onchange: update },
    LENGTHS.map(([ms, label]) => h('option', { value: ms, selected: ms === DEFAULT_LENGTH }, label)),
  );
  const speed = h(
    'select',
    { 'data-testid': 'replay-speed', onchange: update },
    SPEEDS.map(([value, label]) => h('option', { value, selected: value === DEFAULT_SPEED }, label)),
  );
  // A textarea, so the whole URL shows, wrapped: it is long and the bot's owner wants to read it.
  const text = h('textarea', {
    readonly: true,
    rows: 3,
    class: 'replay-url',
    spellcheck: 'false',
    'aria-label': 'Replay WebSocket URL (key masked; Copy copies it whole)',
    'data-testid': 'replay-url',
  });
  const copyButton = h('button', { type: 'button', 'data-testid': 'replay-copy', onclick: copy }, 'Copy URL');
  const windowText = h('p', { class: 'hint', 'data-testid': 'replay-window', 'aria-live': 'polite' });
  const el = h(
    'section',
    { class: 'card replay-card', 'aria-labelledby': 'replay-title', 'data-testid': 'replay-control' },
    h('div', { class: 'card-head' }, h('h2', { id: 'replay-title' }, 'Replay from here')),
    h('p', { class: 'muted' }, 'The market from the order book’s time on, over WebSocket in Polymarket’s protocol: paste the URL into your bot.'),
    h('div', { class: 'form-row' }, field('Length', length), field('Speed', speed), copyButton),
    text,
    windowText,
  );
  let full = '';

  function span() {
    const ms = Number(length.value);
    const from = bookTime + ms <= hi ? bookTime : Math.max(lo, hi - ms);
    return { from, to: Math.min(hi, from + ms) };
  }

  function update() {
    const { from, to } = span();
    const key = session.key ?? '';
    const target = new URL(url('/v1/replay/market', { from, to, speed: speed.value, key }), location.href);
    target.protocol = target.protocol === 'https:' ? 'wss:' : 'ws:';
    full = target.href;
    text.value = key ? full.replace(encodeURIComponent(key), maskKey(key)) : full;
    const wall = (to - from) / Number(speed.value);
    const pace = speed.value === 'max' ? 'as fast as the bot reads' : wall < MINUTE ? 'plays in under a minute' : `plays in ${fmtDuration(wall)}`;
    windowText.textContent = `${fmtTime(from)} → ${fmtTime(to)} UTC; ${pace}; the replay ends with close code 1000 "replay complete".`;
  }

  async function copy() {
    try {
      await navigator.clipboard.writeText(full);
    } catch {
      // No clipboard API (an insecure origin): the selection route still works.
      const scratch = h('textarea', { class: 'offscreen', readonly: true }, full);
      document.body.append(scratch);
      scratch.select();
      document.execCommand('copy');
      scratch.remove();
    }
    copyButton.textContent = 'Copied';
    setTimeout(() => {
      copyButton.textContent = 'Copy URL';
    }, COPIED_FOR_MS);
  }

  function setTime(ms) {
    bookTime = ms;
    update();
  }
  setTime(hi);
  return { el, setTime, url: () => full };
}
