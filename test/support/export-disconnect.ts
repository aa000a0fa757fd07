import { request as httpRequest } from 'node:http';
import { expect } from 'vitest';
import type { Engine } from '../../src/clickhouse/engine.js';
import { waitFor } from './wait.js';

/** Engine queries still running whose text matches every LIKE pattern. system.processes is shared by all chDB sessions. */
export async function runningQueries(engine: Engine, likes: string[]): Promise<number> {
  const where = likes.map((_, i) => `query LIKE {p${i}:String}`).join(' AND ');
  const params = Object.fromEntries(likes.map((like, i) => [`p${i}`, like]));
  const rows = await engine.rows<{ n: number }>(
    `SELECT count() AS n FROM system.processes WHERE ${where} AND query NOT LIKE '%system.processes%' SETTINGS output_format_json_quote_64bit_integers = 0`,
    { params },
  );
  return Number(rows[0].n);
}

/**
 * An export over a real socket, read slowly (back-pressure must hold the engine, not buffer the whole
 * result): the first bytes come while its engine query runs, and a disconnect cancels that query: it
 * leaves the engine's process list. Held by back-pressure, an export nobody cancels stays there for
 * good, so the wait's generous time-out only says when to call it a failure. Returns the bytes
 * received before the disconnect.
 */
export async function firstBytesThenDisconnect(port: number, path: string, key: string, running: () => Promise<number>): Promise<number> {
  let received = 0;
  const req = httpRequest({ host: '127.0.0.1', port, path, headers: { authorization: `Bearer ${key}` } });
  const firstBytes = new Promise<void>((resolve, reject) => {
    req.on('response', (res) => {
      expect(res.statusCode).toBe(200);
      res.on('data', (chunk: Buffer) => {
        if (received === 0) resolve();
        received += chunk.length;
      });
      res.pause();
      setTimeout(() => res.resume(), 50);
    });
    req.on('error', reject);
  });
  req.end();
  await firstBytes;
  expect(await running()).toBe(1);
  req.destroy();
  await waitFor(async () => (await running()) === 0, 'the export query to leave the engine');
  return received;
}
