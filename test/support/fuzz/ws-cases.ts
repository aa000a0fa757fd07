import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';
import type { Rng } from './rng.js';

/**
 * WebSocket abuse of the replay route (`/v1/replay/market`, with a valid key): subscribe/unsubscribe
 * churn of every asset while never reading, PING floods (read and unread), frames over the 1 MiB
 * limit, binary frames, invalid JSON and wrong shapes, 501 assets, many connections that never read,
 * and frames a WebSocket client must not send (unmasked, reserved bits and opcodes, bad UTF-8,
 * oversized control frames, a continuation with nothing to continue).
 *
 * A case that stops reading keeps its connections open while the harness checks the service (alive,
 * /healthz, RSS): memory a connection makes the service hold shows then, not after the close.
 */

export interface WsContext {
  port: number;
  key: string;
  assets: string[];
  now: number;
  first: number;
  /** The larger run (npm run fuzz): bigger floods and more connections. */
  big: boolean;
  /** The service's RSS growth since the case began (bytes): a flood stops early once it is over this bound. */
  grown(): number;
  stopAt: number;
}

export interface WsOutcome {
  description: string;
  violations: string[];
  /** Connections left open during the checks (closed by `release`). */
  held: number;
  release(): Promise<void>;
}

type WsCase = { name: string; run: (rng: Rng, c: WsContext) => Promise<WsOutcome> };

/** Heavy requests (replays among them) an account on plan unlimited runs at once (docs/API.md §2, issue 35). */
const UNLIMITED_HEAVY = 8;

/** How long a server has to close a connection after a message the contract closes on. */
const CLOSE_WITHIN_MS = 5_000;

function replayUrl(c: WsContext, rng: Rng): { url: string; label: string } {
  // From a time with data, so subscriptions get books and events.
  const from = rng.pick([c.first, c.now - 3_600_000, c.now - 86_400_000]);
  const speed = rng.pick(['max', 'max', '1', '1000']);
  return { url: `ws://127.0.0.1:${c.port}/v1/replay/market?from=${Math.max(0, from)}&to=${c.now}&speed=${speed}&key=${c.key}`, label: `speed=${speed}` };
}

/** A replay that stays open: real time, from a minute ago to an hour ahead. */
function liveUrl(c: WsContext): string {
  return `ws://127.0.0.1:${c.port}/v1/replay/market?from=${c.now - 60_000}&to=${c.now + 3_600_000}&speed=1&key=${c.key}`;
}

/** The first message the server sends (null: none within 10 s, or closed first). */
function firstMessage(client: Client): Promise<string | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), 10_000);
    client.ws.once('message', (d) => {
      clearTimeout(timer);
      resolve(d.toString());
    });
    client.closed.then(() => resolve(null));
  });
}

interface Client {
  ws: WebSocket;
  messages: number;
  closed: Promise<{ code: number; reason: string }>;
  error: string | null;
}

async function open(url: string): Promise<Client> {
  const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 512 * 2 ** 20 });
  const client: Client = { ws, messages: 0, closed: null!, error: null };
  client.closed = new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  ws.on('message', () => client.messages++);
  ws.on('error', (err) => (client.error ??= err.message));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => reject(new Error(`handshake refused: ${res.statusCode} ${body.slice(0, 200)}`)));
    });
    ws.once('error', reject);
  });
  return client;
}

const subscribe = (assets: string[]) => JSON.stringify({ assets_ids: assets, type: 'market' });
const op = (operation: 'subscribe' | 'unsubscribe', assets: string[]) => JSON.stringify({ assets_ids: assets, operation });

/** Sends everything, waiting for the socket to take each batch (never for the server to read). */
async function sendAll(ws: WebSocket, messages: (string | Buffer)[], binary = false) {
  for (const m of messages) {
    if (ws.readyState !== WebSocket.OPEN) return;
    ws.send(m, { binary });
    // The client's own buffer: bounded so this process does not hold what the server will not read.
    if (ws.bufferedAmount > 4 * 2 ** 20) await drained(ws);
  }
}

/** True once the socket drains (or closes); false if it has not within `ms` (the peer stopped reading). */
function drainedOrClosed(socket: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.off('drain', yes).off('close', yes);
      resolve(ok);
    };
    const yes = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    socket.on('drain', yes).on('close', yes);
  });
}

/** True once the client's buffer is under 1 MiB (or closed); false if it is not within `ms`. */
function drained(ws: WebSocket, ms = 10_000): Promise<boolean> {
  const deadline = performance.now() + ms;
  return new Promise((resolve) => {
    const check = () => {
      const ok = ws.bufferedAmount < 2 ** 20 || ws.readyState !== WebSocket.OPEN;
      if (ok || performance.now() > deadline) {
        clearInterval(timer);
        resolve(ok);
      }
    };
    const timer = setInterval(check, 5);
    check();
  });
}

/** Waits for the server to close the connection, expecting one of `codes`. */
async function expectClose(client: Client, codes: number[], what: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([client.closed, new Promise<null>((r) => (timer = setTimeout(() => r(null), CLOSE_WITHIN_MS)))]);
  clearTimeout(timer);
  if (!closed) {
    client.ws.terminate();
    return [`${what}: the connection was not closed within ${CLOSE_WITHIN_MS} ms (expected ${codes.join(' or ')})`];
  }
  return codes.includes(closed.code) ? [] : [`${what}: closed with ${closed.code} ${JSON.stringify(closed.reason)}, expected ${codes.join(' or ')}`];
}

const done = (description: string, violations: string[] = []): WsOutcome => ({ description, violations, held: 0, release: async () => {} });

const held = (description: string, clients: Client[], violations: string[] = []): WsOutcome => ({
  description,
  violations,
  held: clients.length,
  release: async () => {
    for (const client of clients) client.ws.terminate();
    await Promise.all(clients.map((client) => client.closed));
  },
});

/** Opens a connection; a refused handshake is the case's violation. */
async function tryOpen(url: string, description: string): Promise<Client | WsOutcome> {
  try {
    return await open(url);
  } catch (err) {
    return done(description, [`replay handshake with a valid key failed: ${(err as Error).message}`]);
  }
}

const CASES: WsCase[] = [
  {
    name: 'subscribe/unsubscribe churn while never reading',
    async run(rng, c) {
      // Real time with `to` an hour ahead: the replay stays open (at max it would end with the data).
      const cycles = rng.pick(c.big ? [5_000, 10_000, 20_000] : [4_000]);
      const description =
        `churn: subscribe ${c.assets.length} assets at speed=1, take the book array, stop reading, then ${cycles} × (unsubscribe all,` +
        ` subscribe all), one cycle per ms`;
      const client = await tryOpen(liveUrl(c), description);
      if (!('ws' in client)) return client;
      const books = firstMessage(client);
      client.ws.send(subscribe(c.assets));
      if ((await books) === null) return done(description, ['no book array within 10 s of the subscription']);
      client.ws.pause();
      let sent = 0;
      for (; sent < cycles && client.ws.readyState === WebSocket.OPEN; sent++) {
        client.ws.send(op('unsubscribe', c.assets));
        client.ws.send(op('subscribe', c.assets));
        // The pace of a bot's loop: each cycle reaches the server on its own (not one batch of all).
        await new Promise((r) => setTimeout(r, 1));
        // A server that stops reading (back-pressure) ends the flood; one already over the memory bound too.
        if (client.ws.bufferedAmount > 4 * 2 ** 20 && !(await drained(client.ws, 2_000))) break;
        if (sent % 250 === 0 && c.grown() > c.stopAt) break;
      }
      return held(`${description} (${sent} sent)`, [client]);
    },
  },
  {
    name: 'every asset, never reading',
    async run(rng, c) {
      const n = rng.pick(c.big ? [1, 16, 64] : [16]);
      const description =
        `${n} connection(s) subscribe every asset at speed=max from the first tick and never read ` + `(the plan's ${UNLIMITED_HEAVY} open, the rest refused)`;
      const clients: Client[] = [];
      const violations: string[] = [];
      for (let i = 0; i < n; i++) {
        const url = `ws://127.0.0.1:${c.port}/v1/replay/market?from=${c.first}&to=${c.now + 3_600_000}&speed=max&key=${c.key}`;
        const client = await tryOpen(url, description);
        if (!('ws' in client)) {
          // Past the plan's concurrent heavy requests (docs/API.md §2): refused before the upgrade, in the contract's shape.
          const refusal = client.violations[0] ?? '';
          if (i < UNLIMITED_HEAVY || !refusal.includes('429 {"detail":{"error":"too_many_concurrent_requests"')) violations.push(...client.violations);
          continue;
        }
        client.ws.send(subscribe(c.assets));
        client.ws.pause();
        clients.push(client);
      }
      return held(description, clients, violations);
    },
  },
  {
    name: 'PING flood while never reading',
    async run(rng, c) {
      const n = rng.pick(c.big ? [2_000_000, 5_000_000] : [2_000_000]);
      const description = `${n} PINGs in one burst, never reading the PONGs`;
      const raw = await rawHandshake(c, liveUrl(c).replace(/^ws:\/\/[^/]+/, ''));
      if (typeof raw === 'string') return done(description, [raw]);
      raw.socket.pause();
      // 10 bytes a PING (masked), written in 1 MB slices as the socket takes them.
      const one = frame(0x1, Buffer.from('PING'));
      const slice = Buffer.concat(Array.from({ length: 100_000 }, () => one));
      let sent = 0;
      for (; sent < n && !raw.socket.destroyed; sent += 100_000) {
        // A server that stops reading (back-pressure) ends the flood; one already over the memory bound too.
        if (!raw.socket.write(slice) && !(await drainedOrClosed(raw.socket, 2_000))) break;
        if (c.grown() > c.stopAt) break;
      }
      return { description: `${description} (${sent} written)`, violations: [], held: 1, release: async () => void raw.socket.destroy() };
    },
  },
  {
    name: 'PING flood, reading',
    async run(rng, c) {
      const n = rng.pick([1_000, 10_000]);
      const { url, label } = replayUrl(c, rng);
      const description = `${n} PINGs, reading: ${n} PONGs must come, ${label}`;
      const client = await tryOpen(url, description);
      if (!('ws' in client)) return client;
      let pongs = 0;
      const all = new Promise<boolean>((resolve) => {
        client.ws.on('message', (d) => {
          if (d.toString() === 'PONG' && ++pongs === n) resolve(true);
        });
        client.closed.then(() => resolve(false));
        setTimeout(() => resolve(false), 10_000);
      });
      await sendAll(
        client.ws,
        Array.from({ length: n }, () => 'PING'),
      );
      const ok = await all;
      client.ws.terminate();
      return done(description, ok ? [] : [`${pongs} PONGs for ${n} PINGs (within 10 s)`]);
    },
  },
  {
    name: 'text frame over 1 MiB',
    async run(rng, c) {
      const size = rng.pick([2 ** 20 + 1, 4 * 2 ** 20, 16 * 2 ** 20]);
      const description = `one text frame of ${size} bytes (the limit is 1 MiB): closed with 1009`;
      const client = await tryOpen(replayUrl(c, rng).url, description);
      if (!('ws' in client)) return client;
      client.ws.send('x'.repeat(size));
      return done(description, await expectClose(client, [1009], description));
    },
  },
  {
    name: 'binary frame',
    async run(rng, c) {
      const description = 'a binary frame: closed with 1008';
      const client = await tryOpen(replayUrl(c, rng).url, description);
      if (!('ws' in client)) return client;
      client.ws.send(Buffer.from(subscribe(c.assets)), { binary: true });
      return done(description, await expectClose(client, [1008], description));
    },
  },
  {
    name: 'invalid messages',
    async run(rng, c) {
      const bad = rng.pick([
        '{',
        'ping',
        'PING ',
        '[]',
        'null',
        '"x"',
        '{"assets_ids":"1","type":"market"}',
        '{"assets_ids":[1],"type":"market"}',
        '{"assets_ids":["1"],"type":"nope"}',
        '{"assets_ids":["1"],"operation":"drop"}',
        `{"assets_ids":["${'1'.repeat(101)}"],"type":"market"}`,
        '{"assets_ids":["١٢٣"],"type":"market"}',
        '{"__proto__":{"assets_ids":["1"]},"type":"market"}',
        '\u0000',
        '',
      ]);
      const description = `invalid message ${JSON.stringify(bad)}: closed with 1008`;
      const client = await tryOpen(replayUrl(c, rng).url, description);
      if (!('ws' in client)) return client;
      client.ws.send(bad);
      return done(description, await expectClose(client, [1008], description));
    },
  },
  {
    name: '501 assets',
    async run(rng, c) {
      const split = rng.chance(0.5);
      const ids = Array.from({ length: 501 }, (_, i) => (i < c.assets.length ? c.assets[i] : String(10n ** 70n + BigInt(i))));
      const description = `501 assets${split ? ' in two subscriptions (250 + 251)' : ' in one subscription'}: closed with 1008`;
      const client = await tryOpen(replayUrl(c, rng).url, description);
      if (!('ws' in client)) return client;
      if (split) client.ws.send(subscribe(ids.slice(0, 250)));
      client.ws.send(split ? op('subscribe', ids.slice(250)) : subscribe(ids));
      return done(description, await expectClose(client, [1008], description));
    },
  },
  {
    name: '500 assets (the limit) and duplicates',
    async run(rng, c) {
      const dup = rng.chance(0.5);
      const ids = dup
        ? Array.from({ length: 5_000 }, () => c.assets[0])
        : Array.from({ length: 500 }, (_, i) => (i < c.assets.length ? c.assets[i] : String(10n ** 70n + BigInt(i))));
      const description = dup ? 'one asset 5000 times in one subscription: books come, no close' : '500 assets: books come, no close';
      const client = await tryOpen(replayUrl(c, rng).url, description);
      if (!('ws' in client)) return client;
      const books = new Promise<string | null>((resolve) => {
        client.ws.once('message', (d) => resolve(d.toString()));
        client.closed.then((x) => resolve(`closed ${x.code} ${x.reason}`));
        setTimeout(() => resolve(null), 10_000);
      });
      client.ws.send(subscribe(ids));
      const first = await books;
      client.ws.terminate();
      const violations =
        first === null ? ['no book array within 10 s'] : first.startsWith('[') ? [] : [`first message is not the book array: ${first.slice(0, 120)}`];
      return done(description, violations);
    },
  },
  {
    name: 'frames a client must not send',
    async run(rng, c) {
      const kinds: [string, () => Buffer, number[]][] = [
        ['unmasked text frame', () => frame(0x1, Buffer.from('PING'), { mask: false }), [1002]],
        ['RSV1 set without an extension', () => frame(0x1, Buffer.from('PING'), { rsv: 0x40 }), [1002]],
        ['reserved opcode 0x3', () => frame(0x3, Buffer.from('x')), [1002]],
        ['continuation with nothing to continue', () => frame(0x0, Buffer.from('x')), [1002]],
        ['ping of 200 bytes (control > 125)', () => frame(0x9, Buffer.alloc(200, 1)), [1002]],
        ['fragmented control frame', () => frame(0x9, Buffer.from('x'), { fin: false }), [1002]],
        ['invalid UTF-8 text', () => frame(0x1, Buffer.from([0xc3, 0x28])), [1007]],
        ['close with code 999', () => frame(0x8, Buffer.from([0x03, 0xe7])), [1002]],
        ['close with a 1-byte payload', () => frame(0x8, Buffer.from([0x03])), [1002]],
        ['64-bit length of 2^62', () => Buffer.concat([Buffer.from([0x81, 0xff, 0x40, 0, 0, 0, 0, 0, 0, 0]), randomBytes(4), Buffer.from('x')]), [1009, 1002]],
        [
          'PING in 2000 fragments',
          () => Buffer.concat(Array.from({ length: 2000 }, (_, i) => frame(i === 0 ? 0x1 : 0x0, Buffer.from(i === 0 ? 'P' : ''), { fin: false }))),
          [],
        ],
      ];
      const [label, bytes, codes] = rng.pick(kinds);
      const description = `raw frame: ${label}${codes.length ? `: closed with ${codes.join(' or ')}` : ': the connection stays usable'}`;
      const raw = await rawHandshake(c);
      if (typeof raw === 'string') return done(description, [raw]);
      raw.socket.write(bytes());
      if (!codes.length) {
        raw.socket.destroy();
        return done(description);
      }
      const code = await raw.closeCode;
      raw.socket.destroy();
      if (code === null) return done(description, [`${label}: not closed within ${CLOSE_WITHIN_MS} ms`]);
      // Some servers drop the TCP connection without a close frame on a protocol error: -1.
      return done(description, codes.includes(code) || code === -1 ? [] : [`${label}: closed with ${code}, expected ${codes.join(' or ')}`]);
    },
  },
  {
    name: 'connection dropped mid-replay',
    async run(rng, c) {
      const description = 'subscribe every asset at speed=max, read a little, then reset the TCP connection';
      const client = await tryOpen(`ws://127.0.0.1:${c.port}/v1/replay/market?from=${c.first}&to=${c.now}&speed=max&key=${c.key}`, description);
      if (!('ws' in client)) return client;
      const some = new Promise<void>((resolve) => {
        client.ws.on('message', () => client.messages >= rng.int(1, 50) && resolve());
        client.closed.then(() => resolve());
      });
      client.ws.send(subscribe(c.assets));
      await Promise.race([some, new Promise((r) => setTimeout(r, 5_000))]);
      (client.ws as unknown as { _socket: Socket })._socket.resetAndDestroy();
      await client.closed;
      return done(description);
    },
  },
];

export const WS_KINDS = CASES.length;

/** Case `index`: each kind once in order, then kinds at random (their parameters from the case's rng). */
export function wsCase(index: number): WsCase {
  return index < CASES.length ? CASES[index] : CASES[index % CASES.length];
}

/** A WebSocket frame as a client writes it (masked unless told otherwise). */
function frame(opcode: number, payload: Buffer, o: { fin?: boolean; mask?: boolean; rsv?: number } = {}): Buffer {
  const fin = o.fin ?? true;
  const mask = o.mask ?? true;
  const head = [(fin ? 0x80 : 0) | (o.rsv ?? 0) | opcode];
  const len = payload.length;
  if (len < 126) head.push((mask ? 0x80 : 0) | len);
  else if (len < 65_536) head.push((mask ? 0x80 : 0) | 126, len >> 8, len & 0xff);
  else throw new Error('frame too long for this helper');
  if (!mask) return Buffer.concat([Buffer.from(head), payload]);
  const key = randomBytes(4);
  const masked = Buffer.from(payload.map((b, i) => b ^ key[i % 4]));
  return Buffer.concat([Buffer.from(head), key, masked]);
}

/** A replay handshake on a bare socket; then the close code the server sends (-1: dropped without one; null: still open). */
async function rawHandshake(
  c: WsContext,
  path = `/v1/replay/market?from=${c.now - 60_000}&to=${c.now}&speed=1&key=${c.key}`,
): Promise<{ socket: Socket; closeCode: Promise<number | null> } | string> {
  const socket = connect({ port: c.port, host: '127.0.0.1' });
  let buffer = Buffer.alloc(0);
  let upgraded = false;
  const handshake = new Promise<string | null>((resolve) => {
    socket.on('data', (d: Buffer) => {
      buffer = Buffer.concat([buffer, d]);
      if (upgraded) return;
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buffer.subarray(0, end).toString('latin1');
      buffer = buffer.subarray(end + 4);
      upgraded = head.startsWith('HTTP/1.1 101');
      resolve(upgraded ? null : `replay handshake with a valid key failed: ${head.split('\r\n')[0]}`);
    });
    socket.once('close', () => resolve('the connection closed during the handshake'));
    socket.once('error', () => {});
  });
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${c.port}\r\n` +
      `Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`,
  );
  const refused = await handshake;
  if (refused) {
    socket.destroy();
    return refused;
  }
  const closeCode = new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), CLOSE_WITHIN_MS);
    const scan = () => {
      // Server frames are unmasked; look for a close frame (opcode 8).
      let at = 0;
      while (buffer.length - at >= 2) {
        const opcode = buffer[at] & 0x0f;
        let len = buffer[at + 1] & 0x7f;
        let off = at + 2;
        if (len === 126) {
          if (buffer.length - at < 4) return;
          len = buffer.readUInt16BE(at + 2);
          off = at + 4;
        } else if (len === 127) {
          if (buffer.length - at < 10) return;
          len = Number(buffer.readBigUInt64BE(at + 2));
          off = at + 10;
        }
        if (buffer.length < off + len) return;
        if (opcode === 0x8) {
          clearTimeout(timer);
          return resolve(len >= 2 ? buffer.readUInt16BE(off) : 1005);
        }
        at = off + len;
      }
    };
    socket.on('data', scan);
    scan();
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(-1);
    });
  });
  return { socket, closeCode };
}
