import { randomBytes } from 'node:crypto';
import { type Config, ConfigError } from '../config.js';
import { NowPaymentsProvider } from './nowpayments.js';
import type { PaymentProvider } from './provider.js';
import { SandboxProvider } from './sandbox.js';

export type { PaymentProvider } from './provider.js';

/**
 * The provider config.PAYMENTS names (docs/BILLING.md), or null when payments are off: subscribe then
 * answers 503 payments_unavailable. Without NOWPAYMENTS_IPN_SECRET the sandbox signs with a random
 * secret made now, so only its own Pay button can produce a valid IPN; the real processor cannot
 * work without the shared secret.
 */
export function createPaymentProvider(config: Config): PaymentProvider | null {
  if (config.PAYMENTS === 'none') return null;
  if (config.PAYMENTS === 'nowpayments') {
    if (!config.NOWPAYMENTS_API_KEY || !config.NOWPAYMENTS_IPN_SECRET) {
      throw new ConfigError('Invalid configuration: NOWPAYMENTS_IPN_SECRET is required when NOWPAYMENTS_API_KEY is set (IPNs could not be verified)');
    }
    return new NowPaymentsProvider({
      apiKey: config.NOWPAYMENTS_API_KEY,
      ipnSecret: config.NOWPAYMENTS_IPN_SECRET,
      baseUrl: config.NOWPAYMENTS_BASE_URL,
      publicUrl: config.publicUrl,
    });
  }
  return new SandboxProvider(config.publicUrl, config.NOWPAYMENTS_IPN_SECRET ?? randomBytes(32).toString('hex'));
}
