import type { ImportProgress } from './run.js';

/**
 * One line of `npm run import`'s progress (docs/INGEST.md §6.5): the file being read (a bar, its rows
 * of how many), then the whole import (files done, rows, rows/s, bytes, ETA, elapsed). `width`: a
 * terminal's, the file's name shortened to fit.
 */
export function progressText(p: ImportProgress, width?: number): string {
  const share = p.unitRowsTotal > 0 ? Math.min(1, p.unitRows / p.unitRowsTotal) : null;
  const bar = share === null ? '' : `${'█'.repeat(Math.round(share * 10))}${'░'.repeat(10 - Math.round(share * 10))} ${Math.floor(share * 100)}% `;
  const unitRows = p.unitRowsTotal > 0 ? `${p.unitRows}/${p.unitRowsTotal} rows` : `${p.unitRows} rows`;
  const eta = p.etaSeconds === null ? '?' : duration(p.etaSeconds);
  const overall =
    `files ${p.unitsDone}/${p.units}, ${p.rows} rows, ${p.rowsPerSecond} rows/s, ${mb(p.bytes)}/${mb(p.bytesTotal)} MB, ` +
    `ETA ${eta}, ${(p.elapsedMs / 1000).toFixed(1)} s`;
  if (p.unitsDone >= p.units || p.unit === '') return overall;
  const tail = `: ${bar}${unitRows} · ${overall}`;
  const room = width === undefined ? Infinity : Math.max(12, width - tail.length - 1);
  const name = p.unit.length > room ? `…${p.unit.slice(p.unit.length - room + 1)}` : p.unit;
  return `${name}${tail}`;
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(0);

function duration(seconds: number): string {
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}
