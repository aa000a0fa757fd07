/**
 * What a market-channel client may send (docs/TIME-MACHINE.md §1, Polymarket's own messages): the
 * subscription `{"assets_ids": […], "type": "market"}` (also "MARKET"), later changes
 * `{"assets_ids": […], "operation": "subscribe" | "unsubscribe"}`, and the text `PING`.
 * `custom_feature_enabled: true` on a subscription asks for best_bid_ask, new_market and
 * market_resolved (Polymarket's rule); other members its clients send (`initial_dump`, `auth`) are ignored.
 */
export type ClientMessage =
  | { kind: 'ping' }
  | { kind: 'subscribe'; assets: string[]; custom: boolean }
  | { kind: 'unsubscribe'; assets: string[] }
  | { kind: 'bad'; reason: string };

/** Polymarket's limit per connection; more closes the connection with 1008. */
export const MAX_ASSETS = 500;

const ASSET_ID = /^\d{1,100}$/;

export function parseClientMessage(text: string): ClientMessage {
  if (text === 'PING') return { kind: 'ping' };
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return { kind: 'bad', reason: 'message is neither PING nor JSON' };
  }
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) return { kind: 'bad', reason: 'message must be a JSON object' };
  const { assets_ids: assets, type, operation, custom_feature_enabled: custom } = msg as Record<string, unknown>;
  if (!Array.isArray(assets)) return { kind: 'bad', reason: 'assets_ids must be an array of asset ids' };
  if (!assets.every((a) => typeof a === 'string' && ASSET_ID.test(a))) return { kind: 'bad', reason: 'assets_ids must hold asset ids of 1-100 decimal digits' };
  if (operation === undefined) {
    if (type === 'market' || type === 'MARKET') return { kind: 'subscribe', assets: assets as string[], custom: custom === true };
    return { kind: 'bad', reason: 'type must be "market" (or give an operation)' };
  }
  if (operation === 'subscribe') return { kind: 'subscribe', assets: assets as string[], custom: custom === true };
  if (operation === 'unsubscribe') return { kind: 'unsubscribe', assets: assets as string[] };
  return { kind: 'bad', reason: 'operation must be "subscribe" or "unsubscribe"' };
}
