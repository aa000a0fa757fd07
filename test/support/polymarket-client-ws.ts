import { createPublicClient, forkEnvironmentConfig } from '@polymarket/client';

/**
 * `@polymarket/client`'s market WebSocket, unmodified, with its CLOB market endpoint forked to
 * `<url>` (the replay): `node [--experimental-websocket] --import tsx polymarket-client-ws.ts <url>
 * <token,…>` prints each event the client yields as one JSON line until it is killed (the caller
 * stops reading once it has what it waits for; the client reconnects after the replay's close and
 * would replay the window again). Its own process: the client needs a global WebSocket, which Node 20
 * has only behind --experimental-websocket (the package declares Node ≥ 24).
 */
const [url, tokens] = process.argv.slice(2);
const environment = forkEnvironmentConfig({ name: 'tickhouse-replay', clob: { market: { ws: url } } });
const client = createPublicClient({ environment });
const timeout = setTimeout(() => {
  process.stderr.write('polymarket-client-ws: timed out\n');
  process.exit(1);
}, 60_000);
timeout.unref();
const handle = await client.subscribe([{ topic: 'market', tokenIds: tokens.split(',') }]);
for await (const event of handle) process.stdout.write(`${JSON.stringify(event)}\n`);
