import { expiryOfGrant } from '../accounts/plan-change.js';
import { generateApiKey, hashApiKey } from '../auth/keys.js';
import type { AppDeps } from '../deps.js';
import { log } from '../log.js';

/** A local demo key outlives a paid month so a newcomer's setup keeps working; a year is plenty. */
const DEMO_KEY_DAYS = 365;

/**
 * First start in embedded mode (no REDIS_URL, no accounts yet): create an `unlimited` account and
 * print its key once, with curl commands, so the service can be tried at once. Never in Redis mode:
 * a shared store must not get keys nobody asked for.
 */
export async function printDemoKeyOnFirstStart(deps: Pick<AppDeps, 'config' | 'engine' | 'accounts' | 'clock'>): Promise<string | null> {
  if (deps.accounts.kind !== 'embedded' || (await deps.accounts.countAccounts()) > 0) return null;
  const now = deps.clock.now();
  const apiKey = generateApiKey(deps.config.API_KEY_PREFIX);
  const account = await deps.accounts.createAccount({
    email: null,
    keyHash: hashApiKey(apiKey),
    plan: 'unlimited',
    plan_expires_at: expiryOfGrant('unlimited', now, DEMO_KEY_DAYS),
    now,
  });
  log.info('demo account created', { account_id: account.id, plan: account.plan });

  const url = deps.config.publicUrl;
  const [asset] = await deps.engine.rows<{ asset_id: string }>('SELECT asset_id FROM ticks LIMIT 1');
  const lines = [
    '',
    `  Local demo API key (plan unlimited, shown only this once; keep it):`,
    `    ${apiKey}`,
    '',
    `  Try it:`,
    `    curl -H "Authorization: Bearer ${apiKey}" ${url}/v1/me`,
  ];
  if (asset) lines.push(`    curl -H "Authorization: Bearer ${apiKey}" "${url}/v1/ohlcv?asset_id=${asset.asset_id}&resolution=1h"`);
  process.stdout.write(`${lines.join('\n')}\n\n`);
  return apiKey;
}
