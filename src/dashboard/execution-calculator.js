/**
 * What a market order would have cost at the order book's selected time (/v1/execution-price):
 * the whole book is walked server-side, not only the levels the ladder shows.
 */
import { api, errorBox } from './api.js';
import { field, fill, h } from './dom.js';
import { fmtPrice, fmtSize, fmtTime, fmtUsd } from './format.js';

export function executionCalculator({ assetId, book }) {
  const side = h(
    'select',
    { name: 'side', 'data-testid': 'exec-side' },
    h('option', { value: 'BUY' }, 'Buy (eat asks)'),
    h('option', { value: 'SELL' }, 'Sell (eat bids)'),
  );
  const amount = h('input', {
    type: 'number',
    name: 'amount',
    min: '0.000001',
    step: 'any',
    value: '100',
    required: true,
    inputmode: 'decimal',
    'data-testid': 'exec-amount',
  });
  const at = h('span', { 'data-testid': 'exec-time' }, `${fmtTime(book.time, true)} UTC`);
  const result = h('div', { 'aria-live': 'polite' });
  book.onTime((t) => {
    at.textContent = `${fmtTime(t, true)} UTC`;
  });

  const form = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'exec-title',
      onsubmit: async (e) => {
        e.preventDefault();
        fill(result, h('p', { class: 'muted' }, 'Walking the book…'));
        try {
          const { data } = await api('/v1/execution-price', { query: { asset_id: assetId, side: side.value, amount: amount.value, timestamp: book.time } });
          fill(result, outcome(data));
        } catch (err) {
          fill(result, errorBox(err));
        }
      },
    },
    h('h2', { id: 'exec-title' }, 'Execution price'),
    h('p', { class: 'muted' }, 'Market order against the book at ', at, ' (set by the order book time).'),
    h(
      'div',
      { class: 'form-row' },
      field('Side', side),
      field('Shares', amount),
      h('button', { type: 'submit', class: 'primary', 'data-testid': 'exec-submit' }, 'Calculate'),
    ),
    result,
  );
  return { el: form };
}

function outcome(d) {
  const dash = (v, f) => (v === null ? '—' : f(v));
  return h(
    'div',
    { 'data-testid': 'exec-result' },
    h(
      'dl',
      { class: 'facts compact' },
      h('dt', {}, 'Filled'),
      h('dd', {}, `${fmtSize(d.filled_amount)} of ${fmtSize(d.requested_amount)}`, d.fully_filled ? '' : h('span', { class: 'badge off' }, 'partial')),
      h('dt', {}, 'Average price'),
      h('dd', { 'data-testid': 'exec-average' }, dash(d.average_price, fmtPrice)),
      h('dt', {}, 'Best price'),
      h('dd', {}, dash(d.best_price, fmtPrice)),
      h('dt', {}, 'Slippage'),
      h('dd', {}, dash(d.slippage, fmtPrice), d.slippage_bps === null ? '' : ` (${d.slippage_bps} bps)`),
      h('dt', {}, 'Cost'),
      h('dd', {}, d.average_price === null ? '—' : fmtUsd(d.average_price * d.filled_amount)),
    ),
    d.fills.length
      ? h(
          'table',
          { class: 'fills' },
          h('thead', {}, h('tr', {}, h('th', { class: 'num' }, 'Price'), h('th', { class: 'num' }, 'Size'))),
          h(
            'tbody',
            {},
            d.fills.map((f) => h('tr', {}, h('td', { class: 'num' }, fmtPrice(f.price)), h('td', { class: 'num' }, fmtSize(f.size)))),
          ),
        )
      : h('p', { class: 'muted' }, 'That side of the book is empty.'),
  );
}
