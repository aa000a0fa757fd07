import type { OpenAPIHono } from '@hono/zod-openapi';
import { createRoute, z } from '@hono/zod-openapi';
import type { TypedResponse } from 'hono';
import { handOverHeavyLease } from '../auth/heavy-requests.js';
import { checkHistoryWindow, existingEnd } from '../auth/history-window.js';
import type { AppEnv } from '../http/context.js';
import { ApiError } from '../http/errors.js';
import { DATA_ERRORS, errorResponses } from '../http/openapi.js';
import { orderedRange, speedParam, textParam, timeParam } from '../http/params.js';
import type { ReplayServer } from '../replay/server.js';

const replayQuery = orderedRange(
  z.object({
    from: timeParam('from'),
    to: timeParam('to'),
    speed: speedParam().optional(),
    key: textParam('key', 200).optional().openapi({ description: 'The API key, for clients that cannot send `Authorization: Bearer` (never logged).' }),
  }),
  'from',
  'to',
);

const replayRoute = createRoute({
  method: 'get',
  path: '/v1/replay/market',
  operationId: 'replayMarket',
  tags: ['replay'],
  summary: "Replay history over a WebSocket in Polymarket's market-channel protocol",
  description: [
    "A WebSocket upgrade. Speaks Polymarket's market channel (`wss://ws-subscriptions-clob.polymarket.com/ws/market`): send",
    '`{"assets_ids":[…],"type":"market"}`, later `{"assets_ids":[…],"operation":"subscribe"|"unsubscribe"}`, and `PING` (answered `PONG`).',
    'The server sends one array of `book`s at the replay clock for the assets that subscribed (possibly empty), then every stored `book`,',
    "`price_change` and `last_trade_price` of the subscribed assets with clock < t ≤ `to` in (t, arrival) order, in Polymarket's wire shapes",
    '(numbers as strings, `hash` ""), paced by `speed`, and closes with 1000 `replay complete`. A bad message or more than 500 assets closes with 1008.',
    'Validation, auth (header or `key`), the plan window on `from` and the daily count happen before the upgrade: their errors are ordinary',
    'HTTP responses. A plain GET without an upgrade gets 426 `upgrade_required`. Counts as one data request.',
  ].join(' '),
  // Either the Bearer header or the `key` query parameter.
  security: [{ bearer: [] }, { keyQuery: [] }] as { [name: string]: string[] }[],
  request: { query: replayQuery },
  responses: {
    101: { description: 'Switching Protocols: the replay runs on the WebSocket' },
    ...errorResponses(...DATA_ERRORS, 426),
  },
});

export function registerReplayRoutes(app: OpenAPIHono<AppEnv>, replay: ReplayServer): void {
  app.openAPIRegistry.registerComponent('securitySchemes', 'keyQuery', {
    type: 'apiKey',
    in: 'query',
    name: 'key',
    description: 'API key as a query parameter (the replay WebSocket only)',
  });
  app.openapi(replayRoute, (c) => {
    const q = c.req.valid('query');
    checkHistoryWindow(c, { explicitStart: q.from });
    const params = { from: q.from, to: existingEnd(c, q.to), speed: q.speed ?? 1 };
    if (!replay.accept(c.req.raw, { params, requestId: c.get('requestId'), lease: c.get('heavyLease') })) {
      throw new ApiError(
        'upgrade_required',
        'This endpoint is a WebSocket: connect with a WebSocket client (Upgrade: websocket).',
        {},
        { Upgrade: 'websocket' },
      );
    }
    // The connection holds the plan's slot from here on: the replay server releases it when it ends.
    handOverHeavyLease(c);
    c.set('upgraded', true);
    return switchingProtocols(c.body(null, 200));
  });
}

/**
 * The handshake's answer as the route declares it (101). A fetch Response cannot carry a 1xx status:
 * this one only hands its headers (request id, X-RateLimit-*) to the replay server, which writes the
 * real 101 on the socket.
 */
function switchingProtocols(headersOnly: Response) {
  return headersOnly as Response & TypedResponse<null, 101, 'body'>;
}
