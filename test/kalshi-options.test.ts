import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../src/config.js';
import { KALSHI_REST_URL, KALSHI_WS_URL, loadKalshiRecorderOptions } from '../src/venues/kalshi/options.js';

/** `npm run record -- --venue kalshi` settings (docs/KALSHI.md §3): flags over the environment, one-line errors. */
const dir = mkdtempSync(join(tmpdir(), 'tickhouse-kalshi-options-'));
const keyFile = join(dir, 'kalshi.key');
writeFileSync(keyFile, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
const ecFile = join(dir, 'ec.key');
writeFileSync(ecFile, generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
const env = { KALSHI_API_KEY_ID: 'a952bcbe-ec3b-4b5b-b8f9-11dae589608c', KALSHI_PRIVATE_KEY_PATH: keyFile };

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('loadKalshiRecorderOptions', () => {
  it("defaults to Kalshi's production URLs and takes tickers bare or as kalshi: ids", () => {
    const o = loadKalshiRecorderOptions(env, ['--assets', 'KXBTCD-26MAY1417-T94999.99,kalshi:FED-23DEC-T3.00']);
    expect(o).toMatchObject({
      wsUrl: KALSHI_WS_URL,
      restUrl: KALSHI_REST_URL,
      tickers: ['KXBTCD-26MAY1417-T94999.99', 'FED-23DEC-T3.00'],
      tickersPerCommand: 100,
    });
    expect(o.credentials.keyId).toBe(env.KALSHI_API_KEY_ID);
    expect(o.credentials.privateKey.asymmetricKeyType).toBe('rsa');
  });

  it('takes the URLs from KALSHI_WS_URL / KALSHI_REST_URL, and flags over them', () => {
    const fromEnv = loadKalshiRecorderOptions(
      { ...env, KALSHI_WS_URL: 'ws://127.0.0.1:1/trade-api/ws/v2', KALSHI_REST_URL: 'http://127.0.0.1:1/trade-api/v2/' },
      ['--all'],
    );
    expect(fromEnv).toMatchObject({ wsUrl: 'ws://127.0.0.1:1/trade-api/ws/v2', restUrl: 'http://127.0.0.1:1/trade-api/v2', tickers: null });
    expect(loadKalshiRecorderOptions({ ...env, KALSHI_WS_URL: 'ws://a/x' }, ['--all', '--ws-url', 'ws://b/y']).wsUrl).toBe('ws://b/y');
  });

  it('refuses with one line: no mode or both, a bad ticker, a bad URL, a missing or unusable key', () => {
    const error = (e: Record<string, string>, argv: string[]) => {
      try {
        loadKalshiRecorderOptions(e, argv);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message.split('\n')[0];
      }
      throw new Error('no error');
    };
    expect(error(env, [])).toBe('the recorder needs exactly one of --all or --assets <ticker,...>');
    expect(error(env, ['--all', '--assets', 'A'])).toBe('the recorder needs exactly one of --all or --assets <ticker,...>');
    expect(error(env, ['--assets', 'A B'])).toBe('--assets: "A B" is not a Kalshi market ticker');
    expect(error({ ...env, KALSHI_WS_URL: 'not a url' }, ['--all'])).toBe('Invalid recorder configuration: KALSHI_WS_URL must be a URL');
    expect(error({ KALSHI_API_KEY_ID: 'k' }, ['--all'])).toBe(
      '--venue kalshi needs an API key: set KALSHI_PRIVATE_KEY_PATH (the key id and the path of its RSA private key, PEM)',
    );
    expect(error({ ...env, KALSHI_PRIVATE_KEY_PATH: join(dir, 'none.key') }, ['--all'])).toBe(
      `KALSHI_PRIVATE_KEY_PATH: cannot read ${join(dir, 'none.key')} (ENOENT)`,
    );
    expect(error({ ...env, KALSHI_PRIVATE_KEY_PATH: ecFile }, ['--all'])).toBe(`KALSHI_PRIVATE_KEY_PATH: ${ecFile} is not an RSA key (Kalshi keys are RSA)`);
    expect(error(env, ['--all', '--gamma-url', 'x'])).toBe('unknown argument --gamma-url');
  });
});
