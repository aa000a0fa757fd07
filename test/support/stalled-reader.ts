import { connect, type Socket } from 'node:net';

/**
 * A client that asks for something large and then stops reading (issue 35): it sends one GET on a bare
 * socket, reads the status line and headers, and, for a 200, stops reading there (the socket is
 * paused: what the server sends fills the kernel's buffers, then the server's). Any other answer is
 * read whole (Content-Length) and the connection closed. The service must hold a bounded amount for
 * it however long it stays, and nothing once it is gone.
 */
export interface StalledReader {
  status: number;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  /** The body of an answer other than 200; for a 200, the bytes that came with the headers. */
  body: Buffer;
  /** Closes the connection (the client leaves). */
  close(): void;
}

export function stalledReader(port: number, target: string, headers: Record<string, string> = {}): Promise<StalledReader> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    const lines = Object.entries({ Host: '127.0.0.1', ...headers }).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(`GET ${target} HTTP/1.1\r\n${lines.join('')}\r\n`);
    let received = Buffer.alloc(0);
    let settled = false;
    const settle = (answer: StalledReader | Error) => {
      if (settled) return;
      settled = true;
      socket.off('data', onData);
      if (answer instanceof Error) reject(answer);
      else resolve(answer);
    };
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...fields] = received.subarray(0, end).toString('latin1').split('\r\n');
      const head = Object.fromEntries(fields.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const status = Number(statusLine.split(' ')[1]);
      const body = received.subarray(end + 4);
      const close = () => socket.destroy();
      if (status === 200) {
        socket.pause();
        return settle({ status, headers: head, body, close });
      }
      const length = Number(head['content-length'] ?? Number.NaN);
      if (body.length >= length) {
        close();
        settle({ status, headers: head, body: body.subarray(0, length), close });
      }
    };
    socket.on('data', onData);
    socket.on('error', () => {});
    socket.on('close', () => settle(new Error(`closed before an answer: ${JSON.stringify(received.toString('latin1').slice(0, 200))}`)));
  });
}

/** One series of the service's /metrics (a plain gauge or counter, no labels). */
export async function metricValue(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
}
