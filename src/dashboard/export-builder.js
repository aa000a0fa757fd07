/**
 * Builds a /v1/ticks/export request and downloads the file. A plain link cannot carry the
 * Authorization header, so the body is fetched, kept as a Blob and saved under the server's file
 * name; the equivalent curl command is shown for ranges too large for a browser tab.
 */
import { errorBox, send, url } from './api.js';
import { field, fill, h } from './dom.js';
import { fmtSize, parseTimeInput, TIME_PATTERN, toTimeInput } from './format.js';

const DEFAULT_SPAN_MS = 3_600_000;

export function exportBuilder({ assetId, lo, hi }) {
  const timeInput = (ms, testid) =>
    h('input', {
      type: 'text',
      pattern: TIME_PATTERN,
      value: toTimeInput(ms),
      required: true,
      spellcheck: 'false',
      class: 'time-input',
      'data-testid': testid,
    });
  // Default: the last hour of the asset's data (or all of it, when shorter), ends exact to the ms.
  const start = timeInput(Math.max(lo, hi - DEFAULT_SPAN_MS), 'export-start');
  const end = timeInput(hi, 'export-end');
  const format = h(
    'select',
    { 'data-testid': 'export-format' },
    h('option', { value: 'csv' }, 'CSV'),
    h('option', { value: 'jsonl' }, 'JSON Lines'),
    h('option', { value: 'parquet' }, 'Parquet'),
  );
  const event = h(
    'select',
    { 'data-testid': 'export-event' },
    h('option', { value: '' }, 'All events'),
    h('option', { value: 'price_change' }, 'price_change'),
    h('option', { value: 'book' }, 'book'),
    h('option', { value: 'last_trade_price' }, 'last_trade_price'),
  );
  const progress = h('div', { 'aria-live': 'polite', 'data-testid': 'export-status' });
  const curl = h('pre', { class: 'curl', 'data-testid': 'export-curl' });
  const download = h('button', { type: 'submit', class: 'primary', 'data-testid': 'export-download' }, 'Download');
  let running = null;

  const query = () => ({
    asset_id: assetId,
    start: parseTimeInput(start.value),
    end: parseTimeInput(end.value),
    format: format.value,
    event_type: event.value,
  });
  const showCurl = () => {
    curl.textContent = `curl -H "Authorization: Bearer $TICKHOUSE_KEY" -OJ \\\n  "${location.origin}${url('/v1/ticks/export', query())}"`;
  };

  const form = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'export-title',
      onsubmit: async (e) => {
        e.preventDefault();
        if (running) {
          running.abort();
          return;
        }
        running = new AbortController();
        download.textContent = 'Cancel';
        fill(progress, h('span', { class: 'muted' }, 'Starting export…'));
        try {
          const res = await send('/v1/ticks/export', { query: query(), signal: running.signal });
          const name = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') ?? '')?.[1] ?? `ticks_${assetId}.${format.value}`;
          const chunks = [];
          let bytes = 0;
          const reader = res.body.getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            chunks.push(value);
            bytes += value.length;
            progress.textContent = `Received ${fmtSize(bytes / 1024)} KiB…`;
          }
          const blob = new Blob(chunks, { type: res.headers.get('Content-Type') ?? 'application/octet-stream' });
          const link = h('a', { href: URL.createObjectURL(blob), download: name, hidden: true });
          document.body.append(link);
          link.click();
          link.remove();
          setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
          fill(progress, h('span', { 'data-testid': 'export-done' }, `Saved ${name} (${fmtSize(bytes / 1024)} KiB).`));
        } catch (err) {
          // A stream cut after the headers is a failed export (docs/API.md: never a silently short file).
          if (err.name === 'AbortError') fill(progress, h('span', { class: 'muted' }, 'Export cancelled.'));
          else if (err.name === 'TypeError')
            fill(
              progress,
              h(
                'div',
                { class: 'alert', role: 'alert' },
                'The download was interrupted before it finished; nothing was saved. Retry, or use the curl command below.',
              ),
            );
          else fill(progress, errorBox(err));
        } finally {
          running = null;
          download.textContent = 'Download';
        }
      },
    },
    h('h2', { id: 'export-title' }, 'Export ticks'),
    h('p', { class: 'muted' }, 'Every tick in the range, both ends included. Times in UTC.'),
    h('div', { class: 'form-row' }, field('From (UTC)', start), field('To (UTC)', end), field('Format', format), field('Events', event), download),
    progress,
    h('details', {}, h('summary', {}, 'Same export with curl'), curl),
  );
  for (const input of [start, end, format, event]) input.addEventListener('change', showCurl);
  showCurl();
  return { el: form, dispose: () => running?.abort() };
}
