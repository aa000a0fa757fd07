import { randomBytes } from 'node:crypto';
import { type Config, ConfigError } from '../config.js';
import { NowPaymentsProvider } from './nowpayments.js';
import type { PaymentProvider } from './provider.js';
import { SandboxProvider } from './sandbox.js';

export type { PaymentProvider } from './provider.js';

/**
 * NOWPayments when NOWPAYMENTS_API_KEY is set, the sandbox otherwise (BILLING.md). Without
 * NOWPAYMENTS_IPN_SECRET the sandbox signs with a random secret made now, so only its own Pay
 * button can produce a valid IPN; the real processor cannot work without the shared secret.
 */
export function createPaymentProvider(config: Config): PaymentProvider {
  if (config.NOWPAYMENTS_API_KEY) {
    if (!config.NOWPAYMENTS_IPN_SECRET) {
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
