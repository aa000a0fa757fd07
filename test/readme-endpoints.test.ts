import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../scripts/openapi-document.js';
import { SEMANTICS } from '../src/http/data-semantics.js';

/**
 * The endpoint table of docs/guides/api.md against the live /v1/openapi.json, both ways, and its "Data
 * semantics" section against the document's descriptions: the same sentences in both places.
 */
const README = readFileSync(new URL('../docs/guides/api.md', import.meta.url), 'utf8');
const squash = (text: string) => text.replace(/\s+/g, ' ');

/**
 * `METHOD /path` entries of the table's first column. A bare `/path` keeps the method before it; `…/x`
 * is a sibling of the path before it (the same parent).
 */
function tableEndpoints(readme: string): string[] {
  const table = readme.split(/^\| endpoint \| auth \| what \|\n\|---\|---\|---\|\n/m)[1];
  const out: string[] = [];
  for (const line of table.split('\n')) {
    if (!line.startsWith('|')) break;
    let method = '';
    let path = '';
    for (const [, code] of line.split(' | ')[0].matchAll(/`([^`]+)`/g)) {
      const [first, second] = code.split(' ');
      if (second !== undefined) method = first;
      const text = second ?? first;
      path = text.startsWith('…/') ? `${path.slice(0, path.lastIndexOf('/'))}${text.slice(1)}` : text;
      out.push(`${method} ${path}`);
    }
  }
  return out;
}

describe("the API guide's endpoint table", () => {
  it('reads `…/x` and bare paths as the table means them', () => {
    const sample = '| endpoint | auth | what |\n|---|---|---|\n| `GET /a/b/c`, `POST …/d`, `/e` | – | x |\n';
    expect(tableEndpoints(sample)).toEqual(['GET /a/b/c', 'POST /a/b/d', 'POST /e']);
  });

  it('names every operation of /v1/openapi.json, and only those', async () => {
    const doc = (await openApiDocument()) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
    expect(tableEndpoints(README).sort()).toEqual(operations.sort());
  });
});

describe('Data semantics', () => {
  const section = squash(README.slice(README.indexOf('## Data semantics'), README.indexOf('## The instrument at any instant')));

  it('the guide says each sentence, whole', () => {
    for (const [key, sentence] of Object.entries(SEMANTICS)) expect(section, key).toContain(sentence);
  });

  it('the OpenAPI document says each sentence in its description, and on the fields they concern', async () => {
    const doc = (await openApiDocument()) as any;
    for (const [key, sentence] of Object.entries(SEMANTICS)) expect(doc.info.description, key).toContain(sentence);
    const schemas = doc.components.schemas;
    expect(schemas.Candle.properties.volume.description).toBe(SEMANTICS.volume);
    expect(doc.paths['/v1/ohlcv'].get.description).toContain(`${SEMANTICS.candles} ${SEMANTICS.volume} ${SEMANTICS.buckets}`);
    expect(schemas.Tick.properties.side.description).toBe(SEMANTICS.side);
    expect(schemas.MarketEntry.properties.side.description).toBe(SEMANTICS.side);
    expect(schemas.MarketEntry.properties.first_seen.description).toBe(SEMANTICS.zones);
    expect(schemas.OrderBook.properties.datetime.description).toBe(SEMANTICS.zones);
    expect(doc.paths['/v1/prices-history'].get.description).toBe(SEMANTICS.times);
    expect(doc.paths['/v1/ticks'].get.description).toContain(SEMANTICS.ranges);
    expect(doc.paths['/v1/ticks'].get.responses['429'].headers['X-RateLimit-Reset'].description).toContain(SEMANTICS.rateLimit);
  });
});
