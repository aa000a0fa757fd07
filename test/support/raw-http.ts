import { connect } from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends `bytes` as they are on a new connection (no client library to tidy them up) and reads the
 * answer: a Content-Length-framed response, or everything up to the server's close. Rejects if the
 * connection ends with no answer at all (a server that dropped the request, or died).
 */
export function rawRequest(port: number, bytes: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let received: Buffer = Buffer.alloc(0);
    const parse = (): RawAnswer | null => {
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return null;
      const [statusLine, ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const length = headers['content-length'] === undefined ? null : Number(headers['content-length']);
      if (length !== null && received.length < end + 4 + length) return null;
      const body = received.subarray(end + 4, length === null ? undefined : end + 4 + length).toString('utf8');
      return { status: Number(statusLine.split(' ')[1]), headers, body };
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const answer = parse();
      if (answer && answer.headers['content-length'] !== undefined) {
        socket.destroy();
        resolve(answer);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      const answer = parse();
      if (answer) resolve(answer);
      else reject(new Error(`the connection closed without an answer (received ${JSON.stringify(received.toString('latin1').slice(0, 200))})`));
    });
  });
}
