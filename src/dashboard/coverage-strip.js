/**
 * What was recorded for the asset (/v1/coverage, docs/TIME-MACHINE.md §4), drawn under the candles: one
 * cell per UTC day coloured by its condition, a track of captured time and gaps across the days, and
 * a mark at each drifted book (the first 100). Each day has a tooltip (hover or keyboard focus).
 */
import { api, errorBox } from './api.js';
import { fill, h } from './dom.js';
import { fmtInt, fmtTime } from './format.js';

const DAY = 86_400_000;
const REASONS = {
  not_recording: 'recorder not running',
  disconnected: 'socket disconnected',
  not_subscribed: 'not subscribed yet',
  source_missing: 'missing from the imported archive',
  unknown: 'no capture record',
};

export function coverageStrip({ assetId, lo, hi }) {
  const summary = h('p', { class: 'coverage-summary hint', 'aria-live': 'polite' }, 'Loading coverage…');
  const body = h('div', { class: 'coverage-body' });
  const tip = h('div', { class: 'coverage-tip', role: 'tooltip', id: `coverage-tip-${assetId}`, hidden: true });
  const el = h('div', { class: 'coverage', 'data-testid': 'coverage-strip' }, h('h3', {}, 'Coverage'), summary, body, tip);
  const request = new AbortController();

  async function load() {
    try {
      const { data } = await api('/v1/coverage', { query: { asset_id: assetId, start: lo, end: hi }, signal: request.signal });
      render(data);
    } catch (err) {
      if (err.name === 'AbortError') return;
      fill(summary);
      fill(body, errorBox(err));
    }
  }

  function render(c) {
    const counts = {};
    for (const d of c.days) counts[d.condition] = (counts[d.condition] ?? 0) + 1;
    fill(
      summary,
      Object.entries(counts).map(([condition, n]) => h('span', { class: 'cov-count' }, h('i', { class: `cov-${condition}` }), `${n} ${condition}`)),
      h('span', {}, ` · ${fmtInt(c.books.exchange)} exchange books: ${fmtInt(c.books.verified)} verified, ${fmtInt(c.books.drifted)} drifted`),
      c.reconnects.length ? h('span', {}, ` · ${plural(c.reconnects.length, 'reconnect')}`) : null,
    );
    if (!c.days.length) {
      fill(body);
      return;
    }
    const from = Date.parse(`${c.days[0].date}T00:00:00Z`);
    const to = Date.parse(`${c.days.at(-1).date}T00:00:00Z`) + DAY;
    const at = (t) => `${(((t - from) / (to - from)) * 100).toFixed(3)}%`;
    const span = (a, b) => `left:${at(a)};width:${(((b - a) / (to - from)) * 100).toFixed(3)}%`;

    const days = c.days.map((d) => {
      const start = Date.parse(`${d.date}T00:00:00Z`);
      const cell = h('div', {
        class: `cov-day cov-${d.condition}`,
        tabindex: 0,
        'data-date': d.date,
        'data-condition': d.condition,
        'aria-describedby': tip.id,
        'aria-label': `${d.date}: ${d.condition}`,
      });
      const show = () => showTip(cell, dayText(d, c, start));
      cell.addEventListener('mouseenter', show);
      cell.addEventListener('focus', show);
      cell.addEventListener('mouseleave', hideTip);
      cell.addEventListener('blur', hideTip);
      return cell;
    });
    const track = h(
      'div',
      { class: 'cov-track', 'aria-hidden': 'true' },
      c.captured.map((s) => h('span', { class: 'cov-captured', style: span(s.from, s.to) })),
      c.gaps.map((g) => h('span', { class: `cov-gap cov-gap-${g.reason}`, style: span(g.from, g.to) })),
      c.drift.map((d) => h('span', { class: 'cov-drift', style: `left:${at(d.t)}` })),
    );
    fill(
      body,
      h('div', { class: 'cov-days' }, days),
      track,
      h('div', { class: 'range-ends hint' }, h('span', {}, c.days[0].date), h('span', {}, c.days.at(-1).date)),
      h(
        'ul',
        { class: 'cov-legend hint', 'aria-label': 'Legend' },
        ['available', 'degraded', 'missing', 'unknown'].map((k) => h('li', {}, h('i', { class: `cov-${k}` }), k)),
        h('li', {}, h('i', { class: 'cov-drift-key' }), 'drifted book'),
      ),
    );
  }

  function showTip(cell, lines) {
    fill(
      tip,
      lines.map((line, i) => (i === 0 ? h('strong', {}, line) : h('div', {}, line))),
    );
    tip.hidden = false;
    const box = el.getBoundingClientRect();
    const target = cell.getBoundingClientRect();
    const left = Math.min(Math.max(0, target.left - box.left + target.width / 2 - tip.offsetWidth / 2), box.width - tip.offsetWidth);
    tip.style.left = `${left}px`;
    tip.style.top = `${target.bottom - box.top + 6}px`;
  }

  function hideTip() {
    tip.hidden = true;
  }

  return { el, load, dispose: () => request.abort() };
}

/** The tooltip of one day: its condition, ticks, gap time, and the day's gaps and drifted books. */
function dayText(d, c, start) {
  const end = start + DAY;
  const inDay = (t) => t >= start && t < end;
  const gaps = c.gaps.filter((g) => g.from < end && g.to > start);
  const drifted = c.drift.filter((x) => inDay(x.t));
  const reconnects = c.reconnects.filter((r) => inDay(r.t));
  return [
    `${d.date} — ${d.condition}`,
    `${fmtInt(d.ticks)} ticks · gaps ${fmtGap(d.gap_ms)}`,
    ...gaps.slice(0, 3).map((g) => `gap ${fmtTime(Math.max(g.from, start))} → ${fmtTime(Math.min(g.to, end))}: ${REASONS[g.reason]}`),
    gaps.length > 3 ? `… and ${gaps.length - 3} more gaps` : null,
    reconnects.length ? `${plural(reconnects.length, 'reconnect')}, ${reconnects.filter((r) => r.resynced).length} re-synced` : null,
    drifted.length ? `${plural(drifted.length, 'drifted book')} (most levels differing: ${Math.max(...drifted.map((x) => x.levels_differing))})` : null,
  ].filter(Boolean);
}

const plural = (n, noun) => `${fmtInt(n)} ${noun}${n === 1 ? '' : 's'}`;

function fmtGap(ms) {
  if (ms === 0) return 'none';
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const minutes = Math.round(ms / 60_000);
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
