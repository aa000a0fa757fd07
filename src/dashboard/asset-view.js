/**
 * One outcome token: candles with the coverage strip, the order book at a chosen time, an
 * execution-price calculator, a tick export and the replay URL from the book's time, all over the
 * public API with the signed-in key.
 */
import { api, errorBox, session } from './api.js';
import { candlesChart } from './candles-chart.js';
import { coverageStrip } from './coverage-strip.js';
import { fill, h } from './dom.js';
import { executionCalculator } from './execution-calculator.js';
import { exportBuilder } from './export-builder.js';
import { earliestAllowed, fmtInt, fmtTime, parseUtcText } from './format.js';
import { recallAsset, rememberAsset } from './markets-view.js';
import { orderBook } from './order-book.js';
import { replayControl } from './replay-control.js';

const DEFAULT_RESOLUTION = '1h';

export function renderAsset(root, { assetId }) {
  const parts = [];
  let disposed = false;
  const view = h('section', { class: 'asset-view' }, h('p', { class: 'muted' }, 'Loading…'));
  root.append(view);

  if (!session.key) {
    fill(
      view,
      h(
        'div',
        { class: 'alert', role: 'alert' },
        h('strong', {}, 'Sign in to see market data'),
        h('p', {}, 'Order books, candles and exports need an API key (the free plan covers today’s data).'),
        h('a', { class: 'button', href: '#/account' }, 'Create a key or sign in'),
      ),
    );
    return () => {};
  }

  (async () => {
    try {
      const [asset, me] = await Promise.all([describeAsset(assetId), api('/v1/me')]);
      if (disposed) return;
      const windowStart = earliestAllowed(me.data.data_access_days);
      const first = parseUtcText(asset.first_seen);
      const hi = parseUtcText(asset.last_seen);
      const lo = Math.max(first, windowStart);
      fill(view, header(asset));
      if (hi < lo) {
        view.append(
          h(
            'div',
            { class: 'alert', role: 'alert', 'data-testid': 'outside-window' },
            h('strong', {}, 'This market’s data is older than your plan allows'),
            h('p', {}, `Its data ends ${fmtTime(hi)} UTC; your ${me.data.plan} plan reads from ${fmtTime(windowStart)} UTC.`),
            h('a', { class: 'button', href: '#/account/plans' }, 'See plans and upgrade'),
          ),
        );
        return;
      }
      if (first < windowStart) {
        view.append(
          h(
            'p',
            { class: 'notice', 'data-testid': 'window-note' },
            `Data from ${fmtTime(first)} UTC exists; your ${me.data.plan} plan reads from ${fmtTime(windowStart)} UTC. `,
            h('a', { href: '#/account/plans' }, 'Upgrade for more history'),
          ),
        );
      }
      const book = orderBook({ assetId, lo, hi });
      const chart = candlesChart({ assetId, windowStart, onPick: (t) => book.setTime(t) });
      const calculator = executionCalculator({ assetId, book });
      const exporter = exportBuilder({ assetId, lo, hi });
      const coverage = coverageStrip({ assetId, lo, hi });
      chart.el.append(coverage.el);
      const replay = replayControl({ lo, hi });
      book.onTime(replay.setTime);
      parts.push(book, chart, exporter, coverage);
      view.append(h('div', { class: 'asset-grid' }, chart.el, book.el), h('div', { class: 'grid two' }, calculator.el, exporter.el, replay.el));
      chart.load?.(DEFAULT_RESOLUTION);
      book.start();
      coverage.load();
    } catch (err) {
      if (!disposed) fill(view, errorBox(err));
    }
  })();

  return () => {
    disposed = true;
    for (const part of parts) part.dispose?.();
  };
}

/**
 * The asset's /v1/markets row. Opened from the browser it is cached; on a direct link the latest
 * book names the market (one counted request) and a search by that condition ID finds the row.
 */
async function describeAsset(assetId) {
  const cached = recallAsset(assetId);
  if (cached) return cached;
  const { data: book } = await api('/v1/orderbook', { query: { asset_id: assetId, limit: 1 } });
  const { data: rows } = await api('/v1/markets', { query: { search: book.market, limit: 1000 } });
  const row = rows.find((r) => r.asset_id === assetId);
  if (!row) throw new Error(`Asset ${assetId} is not listed in /v1/markets.`);
  rememberAsset(row);
  return row;
}

function header(asset) {
  return h(
    'header',
    { class: 'asset-head' },
    h('a', { href: '#/markets', class: 'back' }, '← Markets'),
    h('h1', { 'data-testid': 'asset-title' }, asset.question || asset.market),
    h(
      'div',
      { class: 'asset-meta' },
      h('span', { class: `badge side-${String(asset.side).toLowerCase()}` }, asset.side),
      h('span', {}, 'Asset ', h('code', { 'data-testid': 'asset-id' }, asset.asset_id)),
      h('span', {}, 'Market ', h('code', {}, asset.market)),
      h('span', {}, `${fmtTime(parseUtcText(asset.first_seen))} → ${fmtTime(parseUtcText(asset.last_seen))} UTC`),
      h('span', {}, `${fmtInt(asset.total_ticks)} ticks`),
    ),
  );
}
