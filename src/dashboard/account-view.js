/**
 * Account tab: create a key or sign in with one; then plan, usage, key regeneration, plans to buy
 * and invoices. Uses /v1/register, /v1/me, /v1/keys/regenerate and /v1/billing/* only.
 */
import { api, errorBox, events, session } from './api.js';
import { field, fill, h } from './dom.js';
import { earliestAllowed, fmtDate, fmtDuration, fmtInt, fmtTime, fmtUsd, maskKey, nextUtcMidnight, shortId } from './format.js';

/**
 * A key just created or regenerated. Held in memory only, so it is shown once: dismissing it or
 * reloading the page loses it (the browser keeps it in localStorage for signing in, not for display).
 */
let revealed = null;

/** How long to poll billing status after opening an invoice; the IPN may take a while to arrive. */
const INVOICE_POLL_MS = 3_000;
const INVOICE_POLL_FOR_MS = 15 * 60_000;

export function renderAccount(root, { section }) {
  const stop = new AbortController();
  const view = h('div', { class: 'account' });
  root.append(view);

  const redraw = () => (session.key ? signedIn(view, stop.signal, section) : signedOut(view));
  events.addEventListener('session', redraw, { signal: stop.signal });
  redraw();
  return () => {
    stop.abort();
    revealed = null;
  };
}

function signedOut(view) {
  const registerError = h('div');
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'email', placeholder: 'you@example.com' });
  const register = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'register-title',
      onsubmit: async (e) => {
        e.preventDefault();
        const button = register.querySelector('button');
        button.disabled = true;
        fill(registerError);
        try {
          const body = email.value.trim() ? { email: email.value.trim() } : {};
          const { data } = await api('/v1/register', { method: 'POST', body });
          revealed = { key: data.api_key, example: data.example, reason: 'created' };
          session.signIn(data.api_key);
        } catch (err) {
          fill(registerError, errorBox(err));
          button.disabled = false;
        }
      },
    },
    h('h2', { id: 'register-title' }, 'Create an API key'),
    h('p', { class: 'muted' }, 'Free plan: today’s data, 100 data requests a day. Upgrade any time.'),
    field('E-mail (optional)', email),
    h('button', { type: 'submit', class: 'primary', 'data-testid': 'register-button' }, 'Create API key'),
    registerError,
  );

  const signInError = h('div');
  const keyInput = h('input', {
    type: 'password',
    name: 'api_key',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'th_live_…',
    required: true,
    'data-testid': 'signin-key',
  });
  const signIn = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'signin-title',
      onsubmit: async (e) => {
        e.preventDefault();
        fill(signInError);
        // The key is kept only once the API has accepted it.
        try {
          await api('/v1/me', { key: keyInput.value.trim() });
          session.signIn(keyInput.value);
        } catch (err) {
          fill(signInError, errorBox(err));
        }
      },
    },
    h('h2', { id: 'signin-title' }, 'Sign in with a key'),
    h(
      'p',
      { class: 'muted' },
      'Paste your API key (a first `npm start` prints one, on plan unlimited). It stays in this browser only (localStorage) until you sign out.',
    ),
    field('API key', keyInput),
    h('button', { type: 'submit', 'data-testid': 'signin-button' }, 'Sign in'),
    signInError,
  );

  fill(
    view,
    h(
      'section',
      { class: 'intro' },
      h('h1', {}, 'Polymarket order books, ticks and candles'),
      h(
        'p',
        { class: 'muted' },
        'Historical L2 books reconstructed at any millisecond, tick exports in CSV, JSONL and Parquet, OHLCV candles and execution-price simulation.',
      ),
    ),
    h('div', { class: 'grid two' }, register, signIn),
  );
}

async function signedIn(view, signal, section) {
  const status = h('div', { class: 'stack' }, h('p', { class: 'muted' }, 'Loading account…'));
  fill(view, revealed ? keyReveal(view) : null, status);
  let poll = null;
  let shown = null;
  signal.addEventListener('abort', () => clearInterval(poll));

  const load = async () => {
    try {
      const [me, billing, plans] = await Promise.all([api('/v1/me'), api('/v1/billing/status'), loadPlans()]);
      // Polling must not rebuild the page under the user's hands (an open dialog) when nothing changed.
      const signature = JSON.stringify([me.data, billing.data]);
      if (signal.aborted || signature === shown) return;
      shown = signature;
      fill(
        status,
        h('div', { class: 'grid two' }, planCard(me.data), keyCard(view)),
        plansCard(plans, me.data, (invoice) => {
          fill(invoiceNotice, invoice);
          clearInterval(poll);
          const until = Date.now() + INVOICE_POLL_FOR_MS;
          poll = setInterval(() => (Date.now() > until ? clearInterval(poll) : load()), INVOICE_POLL_MS);
        }),
        invoiceNotice,
        invoicesCard(billing.data.invoices),
      );
      if (section === 'plans') {
        document.getElementById('plans')?.scrollIntoView({ block: 'start' });
        section = null;
      }
    } catch (err) {
      if (!signal.aborted) fill(status, errorBox(err));
    }
  };
  const invoiceNotice = h('div', { 'aria-live': 'polite' });
  // Paying happens in another tab: coming back here shows the new plan without a manual reload.
  document.addEventListener('visibilitychange', () => document.visibilityState === 'visible' && load(), { signal });
  await load();
}

function keyReveal(view) {
  const { key, example, reason } = revealed;
  const copied = h('span', { class: 'hint', 'aria-live': 'polite' });
  const keyText = h('output', { class: 'secret', 'data-testid': 'new-api-key' }, key);
  return h(
    'section',
    { class: 'card reveal', role: 'region', 'aria-label': 'Your new API key', 'data-testid': 'new-key-panel' },
    h('h2', {}, reason === 'created' ? 'Your API key' : 'Your new API key'),
    h(
      'p',
      { class: 'warning' },
      h('strong', {}, 'Save it now. '),
      'This is the only time the key is shown: the service stores only a hash of it and cannot show it again.',
      reason === 'regenerated' ? ' The previous key has stopped working.' : '',
    ),
    h(
      'div',
      { class: 'secret-row' },
      keyText,
      h(
        'button',
        {
          type: 'button',
          'data-testid': 'copy-key',
          onclick: async () => {
            try {
              await navigator.clipboard.writeText(key);
              copied.textContent = 'Copied to the clipboard.';
            } catch {
              getSelection().selectAllChildren(keyText);
              copied.textContent = 'Copying was refused: the key is selected, press Ctrl+C.';
            }
          },
        },
        'Copy',
      ),
    ),
    copied,
    example ? h('details', {}, h('summary', {}, 'First request'), h('pre', {}, example)) : null,
    h(
      'button',
      {
        type: 'button',
        class: 'primary',
        'data-testid': 'dismiss-key',
        onclick: () => {
          revealed = null;
          view.querySelector('.reveal')?.remove();
        },
      },
      'I have saved it',
    ),
  );
}

function planCard(me) {
  const since = earliestAllowed(me.data_access_days);
  const history =
    me.data_access_days === 0 ? `Today only (from ${fmtDate(since)} 00:00 UTC)` : `Last ${fmtInt(me.data_access_days)} days (from ${fmtDate(since)} 00:00 UTC)`;
  let expiry = 'Never (free)';
  if (me.plan_expires_at) {
    const at = Date.parse(me.plan_expires_at);
    expiry = me.plan_active ? `${fmtTime(at)} UTC (in ${fmtDuration(at - Date.now())})` : `Expired ${fmtTime(at)} UTC: free limits apply`;
  }
  const reset = nextUtcMidnight();
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'plan-title', 'data-testid': 'plan-card' },
    h('h2', { id: 'plan-title' }, 'Plan'),
    h(
      'div',
      { class: 'plan-head' },
      h('span', { class: 'plan-name', 'data-testid': 'plan-name' }, me.plan),
      h('span', { class: `badge ${me.plan_active ? 'ok' : 'off'}`, 'data-testid': 'plan-status' }, me.plan_active ? 'active' : 'expired'),
    ),
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Expires'),
      h('dd', { 'data-testid': 'plan-expires' }, expiry),
      h('dt', {}, 'History window'),
      h('dd', { 'data-testid': 'history-window' }, history),
      h('dt', {}, 'Account'),
      h('dd', {}, h('code', { title: me.id }, shortId(me.id)), me.email ? ` · ${me.email}` : ''),
    ),
    h(
      'label',
      { class: 'meter-label', for: 'usage-meter' },
      'Requests today',
      h('span', { 'data-testid': 'usage-text' }, `${fmtInt(me.requests_today)} / ${fmtInt(me.rate_limit_daily)}`),
    ),
    h('meter', {
      id: 'usage-meter',
      'data-testid': 'usage-meter',
      min: 0,
      max: me.rate_limit_daily,
      value: me.requests_today,
      low: me.rate_limit_daily * 0.75,
      high: me.rate_limit_daily * 0.9,
      optimum: 0,
    }),
    h('p', { class: 'hint' }, `Resets at 00:00 UTC (in ${fmtDuration(reset - Date.now())}).`),
  );
}

function keyCard(view) {
  const error = h('div');
  const dialog = h(
    'dialog',
    { 'aria-labelledby': 'regen-title', 'data-testid': 'regenerate-dialog' },
    h(
      'form',
      { method: 'dialog' },
      h('h2', { id: 'regen-title' }, 'Regenerate the API key?'),
      h('p', {}, 'A new key is created and the current one stops working immediately, everywhere it is used. Plan, expiry and today’s usage stay as they are.'),
      h(
        'div',
        { class: 'actions' },
        h('button', { value: 'cancel' }, 'Cancel'),
        h('button', { value: 'confirm', class: 'danger', 'data-testid': 'confirm-regenerate' }, 'Regenerate'),
      ),
    ),
  );
  dialog.addEventListener('close', async () => {
    if (dialog.returnValue !== 'confirm') return;
    try {
      const { data } = await api('/v1/keys/regenerate', { method: 'POST' });
      revealed = { key: data.api_key, reason: 'regenerated' };
      session.signIn(data.api_key);
      view.scrollIntoView({ block: 'start' });
    } catch (err) {
      fill(error, errorBox(err));
    }
  });
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'key-title' },
    h('h2', { id: 'key-title' }, 'API key'),
    h('p', {}, 'Signed in with ', h('code', { 'data-testid': 'current-key' }, maskKey(session.key)), '.'),
    h('p', { class: 'muted' }, 'Send it as ', h('code', {}, 'Authorization: Bearer <key>'), '. For example:'),
    h('pre', { class: 'curl' }, `curl -H "Authorization: Bearer $TICKHOUSE_KEY" \\\n  "${location.origin}/v1/me"`),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', 'data-testid': 'regenerate-key', onclick: () => dialog.showModal() }, 'Regenerate key…'),
      h('button', { type: 'button', 'data-testid': 'sign-out', onclick: () => session.signOut() }, 'Sign out'),
    ),
    error,
    dialog,
  );
}

let plansPromise = null;
function loadPlans() {
  plansPromise ??= fetch('/assets/plans.json')
    .then((r) => r.json())
    .catch((err) => {
      plansPromise = null;
      throw err;
    });
  return plansPromise;
}

function plansCard(plans, me, onInvoice) {
  const error = h('div');
  const subscribe = async (plan, button) => {
    button.disabled = true;
    fill(error);
    try {
      const { data } = await api('/v1/billing/subscribe', { method: 'POST', body: { plan } });
      const tab = window.open(data.invoice_url, '_blank');
      if (tab) tab.opener = null;
      onInvoice(
        h(
          'div',
          { class: 'notice', role: 'status', 'data-testid': 'invoice-notice' },
          `Invoice ${data.payment_id} for ${fmtUsd(data.amount_usd)} (${data.plan}) `,
          tab ? 'opened in a new tab. ' : 'is ready. ',
          h('a', { href: data.invoice_url, target: '_blank', rel: 'noopener', 'data-testid': 'invoice-link' }, 'Open the invoice'),
          '. This page updates when the payment is confirmed.',
        ),
      );
    } catch (err) {
      fill(error, errorBox(err));
    } finally {
      button.disabled = false;
    }
  };
  const tiles = plans.map((p) => {
    const current = p.name === me.plan && (me.plan_active || p.name === 'free');
    const button =
      p.price_usd > 0
        ? h(
            'button',
            {
              type: 'button',
              class: current ? '' : 'primary',
              'data-testid': `subscribe-${p.name}`,
              'aria-label': `${current ? 'Extend' : 'Subscribe to'} ${p.name}`,
            },
            current ? 'Extend' : 'Subscribe',
          )
        : null;
    button?.addEventListener('click', () => subscribe(p.name, button));
    return h(
      'div',
      { class: `plan-tile${current ? ' current' : ''}`, 'data-testid': `plan-${p.name}` },
      h('div', { class: 'plan-tile-head' }, h('strong', {}, p.name), current ? h('span', { class: 'badge ok' }, 'current') : null),
      h(
        'div',
        { class: 'price' },
        p.price_usd ? fmtUsd(p.price_usd) : 'Free',
        p.duration_days ? h('span', { class: 'muted' }, ` / ${p.duration_days === 1 ? 'day' : `${p.duration_days} days`}`) : null,
      ),
      h(
        'ul',
        {},
        h('li', {}, p.data_access_days ? `${fmtInt(p.data_access_days)} days of history` : 'Today’s data only'),
        h('li', {}, `${fmtInt(p.rate_limit_daily)} requests / day`),
      ),
      button,
    );
  });
  return h(
    'section',
    { class: 'card', id: 'plans', 'aria-labelledby': 'plans-title' },
    h('h2', { id: 'plans-title' }, 'Plans'),
    h('p', { class: 'muted' }, 'Pay by crypto invoice (USDT, USDC, BTC, ETH…). Paying for your active plan extends it; any other plan starts now.'),
    h('div', { class: 'plan-grid' }, tiles),
    error,
  );
}

function invoicesCard(invoices) {
  const body = invoices.length
    ? h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { 'data-testid': 'invoices' },
          h(
            'thead',
            {},
            h('tr', {}, h('th', {}, 'Invoice'), h('th', {}, 'Plan'), h('th', { class: 'num' }, 'Amount'), h('th', {}, 'Status'), h('th', {}, 'Created (UTC)')),
          ),
          h(
            'tbody',
            {},
            invoices.map((i) =>
              h(
                'tr',
                {},
                h('td', {}, h('code', {}, i.payment_id)),
                h('td', {}, i.plan),
                h('td', { class: 'num' }, fmtUsd(i.amount_usd)),
                h('td', {}, h('span', { class: `badge status-${i.status}`, 'data-testid': 'invoice-status' }, i.status)),
                h('td', {}, fmtTime(typeof i.created_at === 'number' ? i.created_at : Date.parse(i.created_at))),
              ),
            ),
          ),
        ),
      )
    : h('p', { class: 'muted' }, 'No invoices yet.');
  return h('section', { class: 'card', 'aria-labelledby': 'invoices-title' }, h('h2', { id: 'invoices-title' }, 'Invoices'), body);
}
