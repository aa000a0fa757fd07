import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENVIRONMENT_VARIABLES, loadConfig, parseEnvironment } from '../src/config.js';

/**
 * The configuration tables (the service's in docs/guides/operating.md, the recorder's in
 * docs/guides/recorder.md) against the one environment schema: every variable listed exactly once, and
 * each default what the service applies when the variable is unset.
 */
const README = ['operating', 'recorder'].map((guide) => readFileSync(new URL(`../docs/guides/${guide}.md`, import.meta.url), 'utf8')).join('\n');

/** Rows of the `| variable | default | meaning |` tables: [names, defaults] with backticks removed. */
function configRows(): { names: string[]; defaults: string[] }[] {
  const rows: { names: string[]; defaults: string[] }[] = [];
  for (const table of README.split(/^\| variable \| default \| meaning \|\n\|---\|---\|---\|\n/m).slice(1)) {
    for (const line of table.split('\n')) {
      if (!line.startsWith('|')) break;
      const [names, defaults] = line.split(' | ').map((cell) => cell.replace(/^\| /, ''));
      const split = (cell: string) => cell.split(' / ').map((part) => part.replaceAll('`', '').trim());
      rows.push({ names: split(names), defaults: split(defaults) });
    }
  }
  return rows;
}

/** Defaults that are not a plain value: decided by loadConfig from other settings, or generated. */
const DESCRIBED: Record<string, string> = {
  PUBLIC_URL: 'http://localhost:$PORT',
  PAYMENTS: 'see meaning',
  DEMO_DATA: 'see meaning',
  NOWPAYMENTS_IPN_SECRET: 'random in sandbox',
};

describe('the configuration tables of the guides', () => {
  const rows = configRows();
  const listed = rows.flatMap((r) => r.names);

  it('are two well-formed tables (one default per variable, no blank line inside)', () => {
    expect(README.match(/^\| variable \| default \| meaning \|$/gm)).toHaveLength(2);
    for (const r of rows) expect(r.defaults.length, r.names.join(', ')).toBe(r.names.length);
    expect(listed.length).toBeGreaterThan(30);
  });

  it('list every variable of the environment schema exactly once, and nothing else', () => {
    expect([...listed].sort()).toEqual([...ENVIRONMENT_VARIABLES].sort());
  });

  it('give each default the service applies', () => {
    const defaults = parseEnvironment({}) as Record<string, unknown>;
    for (const { names, defaults: texts } of rows) {
      names.forEach((name, i) => {
        const text = texts[i];
        if (name in DESCRIBED) {
          expect(text, name).toBe(DESCRIBED[name]);
          expect(defaults[name], name).toBeUndefined();
          return;
        }
        const value = defaults[name];
        if (text === '–') expect([undefined, ''], name).toContain(value);
        else if (typeof value === 'boolean') expect(value, name).toBe(text === '1');
        else if (typeof value === 'number') expect(value, name).toBe(text === 'off' ? 0 : Number(text.replace(/ \(all\)$/, '')));
        else expect(value, name).toBe(text);
      });
    }
    // The described ones, as loadConfig settles them on the embedded quick start.
    const quickStart = loadConfig({});
    expect([quickStart.publicUrl, quickStart.PAYMENTS, quickStart.DEMO_DATA]).toEqual(['http://localhost:8080', 'sandbox', true]);
  });
});
