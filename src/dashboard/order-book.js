/**
 * The reconstructed L2 book at a chosen time (/v1/orderbook?timestamp=): a time slider, a depth
 * ladder with cumulative bars and a cumulative depth chart drawn on a canvas.
 *
 * The slider spans the asset's first_seen..last_seen (from /v1/markets), with its left end raised to
 * the plan's earliest_allowed: times before it can only answer 403, so they are not offered, and a
 * note says how far back an upgrade would reach. Every fetch counts against the daily limit, so
 * dragging waits for the hand to rest (DRAG_SETTLE_MS) and a newer request cancels an older one.
 */
import { api, errorBox } from './api.js';
import { cssVar, debounce, fill, h } from './dom.js';
import { fmtPrice, fmtSize, fmtTime, parseTimeInput, TIME_PATTERN, toTimeInput } from './format.js';

const DRAG_SETTLE_MS = 300;
/** Arrow keys move the slider by 1/200 of its span, Page keys by 1/20 (its step is 1 ms). */
const KEY_STEPS = { ArrowLeft: -1 / 200, ArrowDown: -1 / 200, ArrowRight: 1 / 200, ArrowUp: 1 / 200, PageDown: -1 / 20, PageUp: 1 / 20 };
const LEVEL_CHOICES = [10, 20, 50, 100];

export function orderBook({ assetId, lo, hi }) {
  let time = hi;
  let levels = 20;
  let book = null;
  let inflight = null;
  const listeners = new Set();

  const slider = h('input', {
    type: 'range',
    min: lo,
    max: hi,
    step: 1,
    value: hi,
    'aria-label': 'Order book time (UTC)',
    'data-testid': 'book-time',
  });
  const picker = h('input', {
    type: 'text',
    pattern: TIME_PATTERN,
    value: toTimeInput(hi),
    spellcheck: 'false',
    class: 'time-input',
    'data-testid': 'book-time-input',
  });
  const depthSelect = h(
    'select',
    { 'aria-label': 'Levels per side' },
    LEVEL_CHOICES.map((n) => h('option', { value: n, selected: n === levels }, `${n} levels`)),
  );
  const summary = h('dl', { class: 'book-summary', 'data-testid': 'book-summary' });
  const ladder = h('div', { class: 'ladder-wrap' });
  const canvas = h('canvas', { class: 'depth', 'data-testid': 'depth-chart', role: 'img', 'aria-label': 'Cumulative depth chart' });
  const status = h('div', { 'aria-live': 'polite' });

  const el = h(
    'section',
    { class: 'card book-card', 'aria-labelledby': 'book-title' },
    h('div', { class: 'card-head' }, h('h2', { id: 'book-title' }, 'Order book'), depthSelect),
    h(
      'div',
      { class: 'time-controls' },
      slider,
      h(
        'div',
        { class: 'time-row' },
        h('label', { class: 'inline' }, h('span', {}, 'At (UTC)'), picker),
        h('button', { type: 'button', onclick: () => setTime(hi) }, 'Latest'),
      ),
      h('div', { class: 'range-ends hint' }, h('span', {}, fmtTime(lo)), h('span', {}, fmtTime(hi))),
    ),
    summary,
    status,
    h('div', { class: 'book-body' }, ladder, canvas),
  );

  async function fetchBook() {
    inflight?.abort();
    const request = (inflight = new AbortController());
    el.setAttribute('aria-busy', 'true');
    try {
      const { data } = await api('/v1/orderbook', { query: { asset_id: assetId, timestamp: time, limit: levels }, signal: request.signal });
      book = data;
      fill(status);
      render();
    } catch (err) {
      if (err.name === 'AbortError') return;
      book = null;
      fill(status, errorBox(err));
      render();
    } finally {
      if (inflight === request) el.removeAttribute('aria-busy');
    }
  }
  const fetchSettled = debounce(fetchBook, DRAG_SETTLE_MS);

  function setTime(ms, { settle = false } = {}) {
    time = Math.min(hi, Math.max(lo, Math.round(ms)));
    slider.value = String(time);
    picker.value = toTimeInput(time);
    picker.removeAttribute('aria-invalid');
    for (const fn of listeners) fn(time);
    if (settle) fetchSettled();
    else fetchBook();
  }

  function render() {
    if (!book) {
      fill(summary);
      fill(ladder);
      drawDepth(canvas, null);
      return;
    }
    const mid = (book.best_bid + book.best_ask) / 2;
    fill(
      summary,
      item('Book as of', h('span', { 'data-testid': 'book-datetime' }, `${book.datetime} UTC`)),
      item('Best bid', h('span', { class: 'bid' }, fmtPrice(book.best_bid))),
      item('Best ask', h('span', { class: 'ask' }, fmtPrice(book.best_ask))),
      item('Mid', fmtPrice(mid)),
      item('Spread', fmtPrice(book.best_ask - book.best_bid)),
    );
    fill(ladder, ladderTable(book));
    centreOnSpread(ladder);
    drawDepth(canvas, book);
  }

  slider.addEventListener('input', () => setTime(Number(slider.value), { settle: true }));
  slider.addEventListener('keydown', (e) => {
    if (!(e.key in KEY_STEPS)) return;
    e.preventDefault();
    setTime(time + Math.max(1, Math.round((hi - lo) * Math.abs(KEY_STEPS[e.key]))) * Math.sign(KEY_STEPS[e.key]), { settle: true });
  });
  picker.addEventListener('change', () => {
    const ms = parseTimeInput(picker.value);
    if (Number.isFinite(ms)) setTime(ms);
    else picker.setAttribute('aria-invalid', 'true');
  });
  depthSelect.addEventListener('change', () => {
    levels = Number(depthSelect.value);
    fetchBook();
  });
  const resize = new ResizeObserver(() => drawDepth(canvas, book));
  resize.observe(canvas);
  const scheme = matchMedia('(prefers-color-scheme: dark)');
  const redraw = () => drawDepth(canvas, book);
  scheme.addEventListener('change', redraw);

  return {
    el,
    get time() {
      return time;
    },
    setTime,
    /** Called with the new time whenever it changes (the calculator and export follow it). */
    onTime(fn) {
      listeners.add(fn);
    },
    start: fetchBook,
    dispose() {
      inflight?.abort();
      resize.disconnect();
      scheme.removeEventListener('change', redraw);
    },
  };
}

function item(label, value) {
  return h('div', {}, h('dt', {}, label), h('dd', {}, value));
}

/** Asks on top (highest first), then the spread, then bids: prices meet in the middle like a ladder. */
function ladderTable(book) {
  const cumulate = (levels) => {
    let total = 0;
    return levels.map((l) => ({ ...l, total: (total += l.size) }));
  };
  const bids = cumulate(book.bids);
  const asks = cumulate(book.asks);
  const max = Math.max(bids.at(-1)?.total ?? 0, asks.at(-1)?.total ?? 0) || 1;
  const row = (side) => (l) => {
    const tr = h(
      'tr',
      { class: side },
      h('td', { class: 'num price' }, fmtPrice(l.price)),
      h('td', { class: 'num' }, fmtSize(l.size)),
      h('td', { class: 'num' }, fmtSize(l.total)),
    );
    tr.style.setProperty('--depth', `${((l.total / max) * 100).toFixed(1)}%`);
    return tr;
  };
  return h(
    'table',
    { class: 'ladder', 'data-testid': 'book-ladder' },
    h('thead', {}, h('tr', {}, h('th', { class: 'num' }, 'Price'), h('th', { class: 'num' }, 'Size'), h('th', { class: 'num' }, 'Total'))),
    h(
      'tbody',
      {},
      asks.slice().reverse().map(row('ask')),
      h(
        'tr',
        { class: 'spread-row' },
        h('td', { colspan: 3 }, asks.length || bids.length ? `spread ${fmtPrice(book.best_ask - book.best_bid)}` : 'empty book'),
      ),
      bids.map(row('bid')),
    ),
  );
}

/**
 * Scrolls the ladder so the spread row sits in its middle: asks run above it and bids below, so a
 * deep book would otherwise open on its far asks with the best levels out of sight.
 */
function centreOnSpread(wrap) {
  const spread = wrap.querySelector('.spread-row');
  if (!spread) return;
  const offset = spread.getBoundingClientRect().top - wrap.getBoundingClientRect().top;
  wrap.scrollTop += offset - (wrap.clientHeight - spread.offsetHeight) / 2;
}

/**
 * Cumulative depth: bids step down to the left of the best bid, asks step up to the right of the
 * best ask, on a price axis spanning the levels shown.
 */
function drawDepth(canvas, book) {
  const ratio = devicePixelRatio || 1;
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  if (!width || !height) return;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const levels = book ? [...book.bids, ...book.asks] : [];
  if (!levels.length) return;

  const [up, down, muted, grid] = ['--up', '--down', '--fg-muted', '--grid'].map(cssVar);
  const pad = { left: 8, right: 8, top: 8, bottom: 18 };
  const prices = levels.map((l) => l.price);
  let minP = Math.min(...prices);
  let maxP = Math.max(...prices);
  if (minP === maxP) {
    minP -= 0.01;
    maxP += 0.01;
  }
  const sum = (side) => side.reduce((a, l) => a + l.size, 0);
  const maxTotal = Math.max(sum(book.bids), sum(book.asks)) || 1;
  const x = (p) => pad.left + ((p - minP) / (maxP - minP)) * (width - pad.left - pad.right);
  const y = (v) => height - pad.bottom - (v / maxTotal) * (height - pad.top - pad.bottom);

  ctx.strokeStyle = grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(pad.left, y(0) + 0.5);
  ctx.lineTo(width - pad.right, y(0) + 0.5);
  ctx.stroke();

  const area = (side, color, towards) => {
    if (!side.length) return;
    let total = 0;
    ctx.beginPath();
    ctx.moveTo(x(side[0].price), y(0));
    for (const l of side) {
      ctx.lineTo(x(l.price), y(total));
      total += l.size;
      ctx.lineTo(x(l.price), y(total));
    }
    ctx.lineTo(towards, y(total));
    ctx.lineTo(towards, y(0));
    ctx.closePath();
    ctx.fillStyle = `${color}40`;
    ctx.fill();
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.5;
    ctx.stroke();
  };
  area(book.bids, up, pad.left);
  area(book.asks, down, width - pad.right);

  ctx.fillStyle = muted;
  ctx.font = `11px ${getComputedStyle(canvas).fontFamily}`;
  ctx.textBaseline = 'bottom';
  ctx.textAlign = 'left';
  ctx.fillText(fmtPrice(minP), pad.left, height);
  ctx.textAlign = 'right';
  ctx.fillText(fmtPrice(maxP), width - pad.right, height);
  ctx.textAlign = 'center';
  ctx.fillText(`max ${fmtSize(maxTotal)}`, width / 2, height);
}
