import type { Engine, QueryOptions } from './engine.js';
import { splitLines } from './lines.js';

/**
 * The rows of a SELECT as arrays in column order (JSONCompactEachRow), one at a time as the engine
 * produces them, for results folded in JS that are too long to hold (book datasets, replays).
 * Pulling is the back-pressure: the engine formats the next chunk only when the consumer wants it.
 * Leaving the loop early (break, return, throw) destroys the stream, which cancels the query.
 */
export async function* compactRowStream<T extends unknown[]>(engine: Engine, sql: string, options: QueryOptions = {}): AsyncGenerator<T> {
  const bytes = engine.stream(sql, 'JSONCompactEachRow', options);
  try {
    for await (const line of splitLines(bytes)) if (line) yield JSON.parse(line) as T;
  } finally {
    bytes.destroy();
  }
}
