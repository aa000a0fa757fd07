import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createHttpServer } from '../../src/http/http-server.js';
import { type DataApp, startDataApp } from './data-app.js';

/**
 * The data app (data-app.ts) served on a real port, as main.ts serves it: HTTP requests to the app,
 * WebSocket handshakes to its replay server. `replayUrl` builds the replay's ws:// URL.
 */
export interface ReplayService extends DataApp {
  httpUrl: string;
  replayUrl(query: Record<string, string | number>): string;
  /** Opens a raw client; resolves once the socket is open (rejects with the HTTP status of a refusal). */
  connect(query: Record<string, string | number>, headers?: Record<string, string>): Promise<WebSocket>;
}

export async function startReplayService(now: number, options: Parameters<typeof startDataApp>[1] = {}): Promise<ReplayService> {
  const data = await startDataApp(now, options);
  const server = createHttpServer(data.app.fetch, data.app.replay);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const httpUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const replayUrl = (query: Record<string, string | number>) =>
    `${httpUrl.replace('http', 'ws')}/v1/replay/market?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`;
  return {
    ...data,
    httpUrl,
    replayUrl,
    connect(query, headers = {}) {
      const ws = new WebSocket(replayUrl(query), { headers });
      return new Promise((resolve, reject) => {
        ws.once('open', () => resolve(ws));
        ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
        ws.once('error', reject);
      });
    },
    async close() {
      data.app.replay.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await data.close();
    },
  };
}
