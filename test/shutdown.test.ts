import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from './support/global-setup.js';
import { type ServiceProcess, startService } from './support/service-process.js';

/**
 * SIGTERM on the real service with real keep-alive sockets: a request already received is answered
 * (with `Connection: close`), a kept-alive connection serves nothing new, no new connection is taken.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'tickhouse-shutdown-'));
let service: ServiceProcess | undefined;
afterAll(() => {
  service?.child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One HTTP/1.1 connection driven byte by byte: what the server sends, and when it closes. */
class RawConnection {
  private received = '';
  private waiters: (() => void)[] = [];
  readonly closed: Promise<void>;
  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      this.received += d;
      this.waiters.splice(0).forEach((w) => w());
    });
    socket.on('error', () => {});
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  send(text: string) {
    this.socket.write(text);
  }

  /** The next complete response (Content-Length framed, as every JSON answer is). */
  async response(): Promise<RawResponse> {
    for (;;) {
      const end = this.received.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine, ...lines] = this.received.slice(0, end).split('\r\n');
        const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
        const length = Number(headers['content-length']);
        if (this.received.length >= end + 4 + length) {
          const body = this.received.slice(end + 4, end + 4 + length);
          this.received = this.received.slice(end + 4 + length);
          return { status: Number(statusLine.split(' ')[1]), headers, body };
        }
      }
      await new Promise<void>((resolve, reject) => {
        this.waiters.push(resolve);
        this.closed.then(() => reject(new Error(`connection closed; received ${JSON.stringify(this.received)}`)));
      });
    }
  }

  /** Waits for an interim `100 Continue` and takes it off what was received. */
  async continued(): Promise<void> {
    const interim = 'HTTP/1.1 100 Continue\r\n\r\n';
    while (!this.received.startsWith(interim)) {
      await new Promise<void>((resolve, reject) => {
        this.waiters.push(resolve);
        this.closed.then(() => reject(new Error(`connection closed; received ${JSON.stringify(this.received)}`)));
      });
    }
    this.received = this.received.slice(interim.length);
  }

  /** Bytes received that are not part of a response read so far. */
  rest() {
    return this.received;
  }
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: tickhouse.test\r\n\r\n`;
const within = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms))]);

describe('SIGTERM with keep-alive clients', () => {
  it('finishes what was sent with Connection: close, serves nothing new, exits 0 before the grace period', { timeout: 90_000 }, async () => {
    const port = await freePort();
    service = startService({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info', SHUTDOWN_GRACE_SECONDS: '30' });
    await service.serving();

    // Both connections are reused: one served request each before the signal.
    const idle = await RawConnection.open(port);
    const busy = await RawConnection.open(port);
    for (const c of [idle, busy]) {
      c.send(get('/healthz'));
      const first = await c.response();
      expect(first.status).toBe(200);
      expect(first.headers.connection).toBe('keep-alive');
      // Longer than the idle timeouts of common load balancers (60 s): the server never closes a connection a proxy is about to reuse.
      expect(first.headers['keep-alive']).toBe('timeout=75');
    }
    // In flight at the signal: headers and half of the body are in, the handler waits for the rest.
    // Node answers `Expect: 100-continue` as it hands the request to the server: once the interim
    // response is here, the request is in flight there.
    const body = '{"email":"drain@example.com"}';
    busy.send(
      `POST /v1/register HTTP/1.1\r\nHost: tickhouse.test\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: ` +
        `100-continue\r\n\r\n${body.slice(0, 10)}`,
    );
    await within(busy.continued(), 10_000, 'the interim 100 Continue');

    const started = Date.now();
    service.child.kill('SIGTERM');
    await within(
      new Promise<void>((resolve) => {
        const check = () => (service!.output().stdout.includes('"msg":"shutting down"') ? resolve() : setTimeout(check, 20));
        check();
      }),
      10_000,
      'the shutdown log line',
    );

    // The idle kept-alive connection is closed at once, with nothing served on it.
    await within(idle.closed, 10_000, 'closing the idle connection');
    expect(idle.rest()).toBe('');
    // No new connection is taken.
    await expect(RawConnection.open(port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });

    // The request in flight is finished, and its answer says the connection ends with it.
    busy.send(body.slice(10));
    const registered = await within(busy.response(), 10_000, 'the in-flight answer');
    expect(registered.status).toBe(201);
    expect(registered.headers.connection).toBe('close');
    expect(JSON.parse(registered.body).data.plan).toBe('free');
    // A request sent after it is not served: the server has closed the connection.
    busy.send(get('/healthz'));
    await within(busy.closed, 10_000, 'closing the in-flight connection');
    expect(busy.rest()).toBe('');

    expect(await within(service.exited, 15_000, 'the exit')).toBe(0);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(service.output().stderr).toBe('');
  });
});
