/**
 * Data tab: the market browser. Public endpoints only (/v1/markets, /v1/markets/stats), so it costs
 * nothing against the daily limit. Rows come sorted by activity (total_ticks desc) from the API.
 */
import { api, errorBox } from './api.js';
import { debounce, fill, h } from './dom.js';
import { fmtInt, fmtTime, parseUtcText, shortId } from './format.js';

const PAGE_SIZE = 50;
const LOADING_RECHECK_MS = 5_000;
const ASSET_CACHE = 'tickhouse.assets';

/**
 * The asset page needs a row's first_seen/last_seen, and /v1/markets cannot be filtered by asset id;
 * rows the user opened are kept for the tab's lifetime so the page opens without a lookup.
 */
export function rememberAsset(row) {
  const cache = JSON.parse(sessionStorage.getItem(ASSET_CACHE) ?? '{}');
  cache[row.asset_id] = row;
  sessionStorage.setItem(ASSET_CACHE, JSON.stringify(cache));
}

export function recallAsset(assetId) {
  return JSON.parse(sessionStorage.getItem(ASSET_CACHE) ?? '{}')[assetId] ?? null;
}

export function renderMarkets(root, initial) {
  const stop = new AbortController();
  let { search, offset } = initial;
  let reload = null;

  const stats = h('div', { class: 'stats', 'data-testid': 'market-stats' });
  const results = h('div', { class: 'results', 'aria-live': 'polite' });
  const input = h('input', {
    type: 'search',
    value: search,
    placeholder: 'Question or condition ID',
    autocomplete: 'off',
    'aria-label': 'Search markets',
    'data-testid': 'market-search',
  });

  const load = async () => {
    clearTimeout(reload);
    // Keep the address shareable without a hashchange (which would rebuild the view and drop focus).
    const query = new URLSearchParams();
    if (search) query.set('search', search);
    if (offset) query.set('offset', String(offset));
    history.replaceState(null, '', `#/markets${query.size ? `?${query}` : ''}`);
    results.setAttribute('aria-busy', 'true');
    try {
      const { data, meta } = await api('/v1/markets', { query: { search, limit: PAGE_SIZE, offset }, signal: stop.signal });
      fill(results, meta.loading ? loadingNote() : null, table(data, meta));
      // A first start is still loading its demo data (docs: /readyz): look again until it is in.
      if (meta.loading) reload = setTimeout(load, LOADING_RECHECK_MS);
    } catch (err) {
      if (err.name !== 'AbortError') fill(results, errorBox(err));
    } finally {
      results.removeAttribute('aria-busy');
    }
  };

  const loadingNote = () =>
    h(
      'p',
      { class: 'notice', role: 'status', 'data-testid': 'loading-note' },
      'The demo dataset is still loading: counts grow until it is in (a minute or so).',
    );

  const table = (rows, meta) => {
    if (rows.length === 0)
      return h('p', { class: 'muted', 'data-testid': 'no-markets' }, search ? `No market matches “${search}”.` : 'No market has data yet.');
    const first = meta.offset + 1;
    const last = meta.offset + meta.count;
    const page = (to) => () => {
      offset = Math.max(0, to);
      load();
    };
    return [
      h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { class: 'markets', 'data-testid': 'markets-table' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', {}, 'Market'),
              h('th', {}, 'Outcome'),
              h('th', { class: 'hide-narrow' }, 'Asset'),
              h('th', { class: 'hide-narrow' }, 'First seen (UTC)'),
              h('th', {}, 'Last seen (UTC)'),
              h('th', { class: 'num' }, 'Ticks'),
            ),
          ),
          h(
            'tbody',
            {},
            rows.map((row) =>
              h(
                'tr',
                {},
                h(
                  'td',
                  { class: 'market-cell' },
                  h('a', { href: `#/asset/${row.asset_id}`, 'data-testid': 'market-link', onclick: () => rememberAsset(row) }, row.question || row.market),
                  row.question ? h('div', { class: 'sub' }, h('code', { title: row.market }, shortId(row.market))) : null,
                ),
                h('td', {}, h('span', { class: `badge side-${String(row.side).toLowerCase()}` }, row.side)),
                h('td', { class: 'hide-narrow' }, h('code', { title: row.asset_id }, shortId(row.asset_id))),
                h('td', { class: 'hide-narrow nowrap' }, fmtTime(parseUtcText(row.first_seen))),
                h('td', { class: 'nowrap' }, fmtTime(parseUtcText(row.last_seen))),
                h('td', { class: 'num' }, fmtInt(row.total_ticks)),
              ),
            ),
          ),
        ),
      ),
      h(
        'nav',
        { class: 'pager', 'aria-label': 'Pages' },
        h('button', { type: 'button', disabled: meta.offset === 0, onclick: page(meta.offset - PAGE_SIZE), 'data-testid': 'prev-page' }, '← Previous'),
        h('span', { 'data-testid': 'page-info' }, `${fmtInt(first)}–${fmtInt(last)} of ${fmtInt(meta.total)}`),
        h('button', { type: 'button', disabled: last >= meta.total, onclick: page(meta.offset + PAGE_SIZE), 'data-testid': 'next-page' }, 'Next →'),
      ),
    ];
  };

  input.addEventListener(
    'input',
    debounce(() => {
      search = input.value.trim();
      offset = 0;
      load();
    }, 250),
  );

  fill(root, h('section', { class: 'markets-view' }, h('div', { class: 'toolbar' }, h('h1', {}, 'Markets'), input), stats, results));

  api('/v1/markets/stats', { signal: stop.signal })
    .then(({ data }) =>
      fill(
        stats,
        stat('Markets', fmtInt(data.total_markets)),
        stat('Outcome tokens', fmtInt(data.total_assets)),
        stat('Ticks', fmtInt(data.total_ticks)),
        stat('Ticks, last 24 h', fmtInt(data.ticks_last_24h)),
        stat('Book snapshots', fmtInt(data.total_snapshots)),
        stat(
          'Data span (UTC)',
          data.first_timestamp === null ? '—' : `${fmtTime(data.first_timestamp).slice(0, 16)} → ${fmtTime(data.last_timestamp).slice(0, 16)}`,
        ),
      ),
    )
    .catch(() => stats.remove());

  load();
  if (!initial.search) input.focus({ preventScroll: true });
  return () => {
    clearTimeout(reload);
    stop.abort();
  };
}

function stat(label, value) {
  return h('div', { class: 'stat' }, h('span', { class: 'stat-label' }, label), h('span', { class: 'stat-value' }, value));
}
