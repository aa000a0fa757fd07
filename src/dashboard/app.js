/**
 * Entry point: hash routing between the Account and Data tabs, and the usage pill in the top bar.
 * Routes: #/account (#/account/plans scrolls to the plans), #/markets?search=&offset=, #/asset/<asset_id>.
 * Each view renders into <main> and returns a function that releases what it holds (charts, timers).
 */
import { renderAccount } from './account-view.js';
import { api, events, session } from './api.js';
import { renderAsset } from './asset-view.js';
import { fmtInt } from './format.js';
import { renderMarkets } from './markets-view.js';

const main = document.getElementById('view');
const pill = document.getElementById('usage-pill');
let dispose = null;

function parseRoute() {
  const [path, query = ''] = location.hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query) };
}

function route() {
  const { parts, params } = parseRoute();
  if (parts.length === 0) {
    location.replace(session.key ? '#/markets' : '#/account');
    return;
  }
  dispose?.();
  dispose = null;
  main.replaceChildren();
  let tab = 'data';
  if (parts[0] === 'account') {
    tab = 'account';
    dispose = renderAccount(main, { section: parts[1] });
  } else if (parts[0] === 'asset' && parts[1]) {
    dispose = renderAsset(main, { assetId: parts[1] });
  } else {
    dispose = renderMarkets(main, { search: params.get('search') ?? '', offset: Number(params.get('offset')) || 0 });
  }
  for (const link of document.querySelectorAll('.tabs a')) {
    if (link.dataset.tab === tab) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

/** Shows "requests today / limit" from /v1/me, then from the X-RateLimit headers of each data call. */
function showUsage(used, limit) {
  pill.hidden = false;
  pill.textContent = `${fmtInt(used)} / ${fmtInt(limit)} today`;
  pill.title = 'Data requests counted today (resets 00:00 UTC)';
  pill.classList.toggle('warn', used >= limit * 0.9);
}

async function refreshUsage() {
  if (!session.key) {
    pill.hidden = true;
    return;
  }
  try {
    const { data } = await api('/v1/me');
    showUsage(data.requests_today, data.rate_limit_daily);
  } catch {
    pill.hidden = true;
  }
}

events.addEventListener('usage', (e) => showUsage(e.detail.used, e.detail.limit));
events.addEventListener('session', refreshUsage);
window.addEventListener('hashchange', route);
route();
refreshUsage();
