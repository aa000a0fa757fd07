import { get } from 'node:http';

/**
 * The bench's HTTP client, in a process of its own (forked by ticks.ts): it reads whole responses
 * and reports bytes, lines, time to first byte and total time. It is not in the bench process
 * because that process has the embedded engine loaded, and with it the engine's allocator: reading
 * a socket there costs about twice the CPU (measured during a ticks export: 0.17 → 0.33 cores),
 * taken from the service on this 2-core machine, which a client anywhere else never pays.
 */
export interface ClientRequest {
  id: number;
  url: string;
  apiKey: string;
  countLines: boolean;
}

export type ClientReply = { id: number; ok: true; bytes: number; lines: number; ttfbMs: number; totalMs: number } | { id: number; ok: false; error: string };

function transfer({ id, url, apiKey, countLines }: ClientRequest): Promise<ClientReply> {
  return new Promise((resolve) => {
    const started = performance.now();
    let ttfb = 0;
    let bytes = 0;
    let lines = 0;
    const fail = (error: string) => resolve({ id, ok: false, error });
    get(url, { headers: { authorization: `Bearer ${apiKey}` } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return fail(`HTTP ${res.statusCode}`);
      }
      res.on('data', (chunk: Buffer) => {
        if (!ttfb) ttfb = performance.now() - started;
        bytes += chunk.length;
        if (countLines) for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      });
      res.on('end', () => resolve({ id, ok: true, bytes, lines, ttfbMs: ttfb, totalMs: performance.now() - started }));
      res.on('error', (err) => fail(err.message));
    }).on('error', (err) => fail(err.message));
  });
}

process.on('message', (request: ClientRequest) => {
  void transfer(request).then((reply) => process.send!(reply));
});
// The bench ends (or dies): so does its client.
process.on('disconnect', () => process.exit(0));
