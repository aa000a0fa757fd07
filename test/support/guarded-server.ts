/**
 * A service child for test/process-guard.test.ts: the real front door (createHttpServer) and the
 * process guard, in front of an app whose routes fail where nothing catches them. Prints its port.
 */

import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { createHttpServer } from '../../src/http/http-server.js';
import { requestId } from '../../src/http/middleware.js';
import { guardProcess } from '../../src/process-guard.js';

guardProcess();
const app = new Hono();
app.use('*', requestId());
app.get('/healthz', (c) => c.json({ status: 'ok' }));
// A callback of the request's own work throws after the handler returned a promise that never settles.
app.get(
  '/throws-later',
  () =>
    new Promise<Response>(() =>
      setTimeout(() => {
        throw new Error('thrown in a timer');
      }, 1),
    ),
);
// A rejection nobody handles, in the same position.
app.get('/rejects-later', () => new Promise<Response>(() => setTimeout(() => void Promise.reject(new Error('rejected in a timer')), 1)));
const server = createHttpServer(app.fetch);
server.listen(0, '127.0.0.1', () => process.stdout.write(`port ${(server.address() as AddressInfo).port}\n`));
