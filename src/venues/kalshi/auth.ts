import { constants, createPrivateKey, type KeyObject, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../config.js';

/**
 * Kalshi's API-key signature (docs.kalshi.com, "API Keys"): RSA-PSS with SHA-256 (salt length = the
 * digest's) over `timestamp + METHOD + path`, the path without its query string, the timestamp in Unix
 * ms; sent as KALSHI-ACCESS-KEY, KALSHI-ACCESS-SIGNATURE (base64) and KALSHI-ACCESS-TIMESTAMP. The
 * WebSocket handshake signs `GET /trade-api/ws/v2`.
 */
export interface KalshiCredentials {
  keyId: string;
  privateKey: KeyObject;
}

export function signedHeaders(credentials: KalshiCredentials, method: string, path: string, now = Date.now()): Record<string, string> {
  const timestamp = String(now);
  const signature = sign('sha256', Buffer.from(timestamp + method.toUpperCase() + path), {
    key: credentials.privateKey,
    padding: constants.RSA_PKCS1_PSS_PADDING,
    saltLength: constants.RSA_PSS_SALTLEN_DIGEST,
  });
  return { 'KALSHI-ACCESS-KEY': credentials.keyId, 'KALSHI-ACCESS-SIGNATURE': signature.toString('base64'), 'KALSHI-ACCESS-TIMESTAMP': timestamp };
}

/** The credentials from KALSHI_API_KEY_ID and KALSHI_PRIVATE_KEY_PATH (a PEM RSA private key); a one-line ConfigError when missing or unreadable. */
export function loadCredentials(env: NodeJS.ProcessEnv): KalshiCredentials {
  const keyId = env.KALSHI_API_KEY_ID?.trim();
  const path = env.KALSHI_PRIVATE_KEY_PATH?.trim();
  if (!keyId || !path) {
    const missing = [!keyId && 'KALSHI_API_KEY_ID', !path && 'KALSHI_PRIVATE_KEY_PATH'].filter(Boolean).join(' and ');
    throw new ConfigError(`--venue kalshi needs an API key: set ${missing} (the key id and the path of its RSA private key, PEM)`);
  }
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`KALSHI_PRIVATE_KEY_PATH: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch {
    throw new ConfigError(`KALSHI_PRIVATE_KEY_PATH: ${path} holds no PEM private key`);
  }
  if (privateKey.asymmetricKeyType !== 'rsa') throw new ConfigError(`KALSHI_PRIVATE_KEY_PATH: ${path} is not an RSA key (Kalshi keys are RSA)`);
  return { keyId, privateKey };
}
