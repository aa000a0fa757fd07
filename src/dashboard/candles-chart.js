/**
 * Candlestick + volume chart over /v1/ohlcv (lightweight-charts v5, loaded as the standalone bundle
 * that defines window.LightweightCharts). Panning or zooming towards the left edge loads older
 * candles; clicking a candle asks the order book for the book at that candle's close.
 */
import { api, errorBox } from './api.js';
import { cssVar, fill, h } from './dom.js';

export const RESOLUTIONS = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '1h': 3_600_000, '4h': 14_400_000, '1d': 86_400_000 };
/** Candles per request: the API maximum, so a screenful and some panning cost one counted request. */
const PAGE = 1000;
/** Load older candles once fewer than this many bars remain hidden on the left. */
const PREFETCH_BARS = 20;
/** Bars on screen at first: readable candles, and the left edge far enough that no second request fires. */
const INITIAL_BARS = 150;

export function candlesChart({ assetId, windowStart, onPick }) {
  const LC = window.LightweightCharts;
  const status = h('div', { class: 'chart-status', 'aria-live': 'polite' });
  // The chart is absolutely placed in its box: sized by the box, it can never grow the box (autoSize loop).
  const canvasHost = h('div', { class: 'chart-host' });
  const plot = h('div', { class: 'chart', 'data-testid': 'candles-chart', role: 'img', 'aria-label': 'Candlestick chart of the best bid' }, canvasHost);
  const buttons = Object.keys(RESOLUTIONS).map((r) =>
    h('button', { type: 'button', 'aria-pressed': 'false', 'data-resolution': r, onclick: () => load(r) }, r),
  );
  const el = h(
    'section',
    { class: 'card chart-card', 'aria-labelledby': 'chart-title' },
    h(
      'div',
      { class: 'card-head' },
      h('h2', { id: 'chart-title' }, 'Candles', h('span', { class: 'muted' }, ' best bid, UTC')),
      h('div', { class: 'segmented', role: 'group', 'aria-label': 'Resolution', 'data-testid': 'resolution' }, buttons),
    ),
    plot,
    status,
  );

  if (!LC) {
    fill(status, h('div', { class: 'alert', role: 'alert' }, 'The chart library did not load (is lightweight-charts installed on the server?).'));
    return { el, dispose() {} };
  }

  const chart = LC.createChart(canvasHost, {
    autoSize: true,
    localization: { priceFormatter: (p) => p.toFixed(3) },
    timeScale: { timeVisible: true, secondsVisible: false, rightOffset: 3 },
    crosshair: { mode: LC.CrosshairMode.Normal },
  });
  const candles = chart.addSeries(LC.CandlestickSeries, { priceFormat: { type: 'price', precision: 3, minMove: 0.001 } });
  const volume = chart.addSeries(LC.HistogramSeries, {
    priceScaleId: 'volume',
    priceFormat: { type: 'volume' },
    lastValueVisible: false,
    priceLineVisible: false,
  });
  chart.priceScale('volume').applyOptions({ scaleMargins: { top: 0.8, bottom: 0 } });
  candles.priceScale().applyOptions({ scaleMargins: { top: 0.08, bottom: 0.25 } });

  const theme = () => {
    const [fg, grid, up, down] = ['--fg-muted', '--grid', '--up', '--down'].map(cssVar);
    chart.applyOptions({
      layout: { background: { type: 'solid', color: 'transparent' }, textColor: fg, fontFamily: getComputedStyle(document.body).fontFamily },
      grid: { vertLines: { color: grid }, horzLines: { color: grid } },
      rightPriceScale: { borderColor: grid },
      timeScale: { borderColor: grid },
    });
    candles.applyOptions({ upColor: up, downColor: down, wickUpColor: up, wickDownColor: down, borderVisible: false });
    state.volumeColors = [`${up}66`, `${down}66`];
    if (state.bars.length) volume.setData(volumeData(state.bars));
  };

  const state = { resolution: null, bars: [], loading: false, exhausted: false, generation: 0, volumeColors: [] };
  const volumeData = (bars) => bars.map((b) => ({ time: b.time, value: b.volume, color: b.close >= b.open ? state.volumeColors[0] : state.volumeColors[1] }));
  const toBar = (c) => ({ time: c.timestamp / 1000, open: c.open, high: c.high, low: c.low, close: c.close, volume: c.volume });
  const draw = () => {
    candles.setData(state.bars);
    volume.setData(volumeData(state.bars));
    plot.dataset.count = String(state.bars.length);
  };

  async function load(resolution) {
    const generation = ++state.generation;
    Object.assign(state, { resolution, bars: [], loading: true, exhausted: false });
    for (const b of buttons) b.setAttribute('aria-pressed', String(b.dataset.resolution === resolution));
    fill(status, h('span', { class: 'muted' }, 'Loading candles…'));
    try {
      // No start/end: the newest candles, clamped by the API to the plan's window (docs/API.md §2).
      const { data } = await api('/v1/ohlcv', { query: { asset_id: assetId, resolution, limit: PAGE } });
      if (generation !== state.generation) return;
      state.bars = data.map(toBar);
      state.exhausted = data.length < PAGE;
      draw();
      const n = state.bars.length;
      if (n > INITIAL_BARS) chart.timeScale().setVisibleLogicalRange({ from: n - INITIAL_BARS, to: n + 2 });
      else chart.timeScale().fitContent();
      fill(
        status,
        data.length ? null : h('span', { class: 'muted', 'data-testid': 'no-candles' }, 'No price changes in your plan’s window for this resolution.'),
      );
    } catch (err) {
      if (generation === state.generation) fill(status, errorBox(err));
    } finally {
      if (generation === state.generation) state.loading = false;
    }
  }

  async function loadOlder() {
    const first = state.bars[0];
    if (state.loading || state.exhausted || !first) return;
    // Nothing older can be read on this plan: stop before the API would clamp to an empty answer.
    if (first.time * 1000 <= windowStart) {
      state.exhausted = true;
      return;
    }
    const generation = state.generation;
    state.loading = true;
    try {
      const { data } = await api('/v1/ohlcv', { query: { asset_id: assetId, resolution: state.resolution, end: first.time * 1000 - 1, limit: PAGE } });
      if (generation !== state.generation) return;
      const older = data.map(toBar).filter((b) => b.time < first.time);
      state.exhausted = older.length === 0 || data.length < PAGE;
      if (older.length) {
        // Logical indices count from the first bar: shift the view by what was prepended so the
        // candles on screen stay where they are.
        const view = chart.timeScale().getVisibleLogicalRange();
        state.bars = older.concat(state.bars);
        draw();
        if (view) chart.timeScale().setVisibleLogicalRange({ from: view.from + older.length, to: view.to + older.length });
      }
    } catch (err) {
      if (generation === state.generation) {
        state.exhausted = true;
        fill(status, errorBox(err));
      }
    } finally {
      if (generation === state.generation) state.loading = false;
    }
  }

  const onRange = (range) => {
    if (range && range.from < PREFETCH_BARS) loadOlder();
  };
  const onClick = (param) => {
    if (param.time === undefined) return;
    // The book at the candle's close: the last millisecond of its bucket.
    onPick(param.time * 1000 + RESOLUTIONS[state.resolution] - 1);
  };
  chart.timeScale().subscribeVisibleLogicalRangeChange(onRange);
  chart.subscribeClick(onClick);
  const scheme = matchMedia('(prefers-color-scheme: dark)');
  scheme.addEventListener('change', theme);
  theme();

  return {
    el,
    load,
    dispose() {
      scheme.removeEventListener('change', theme);
      state.generation++;
      chart.remove();
    },
  };
}
