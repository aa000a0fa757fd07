import { z } from 'zod';
import { accountView } from '../accounts/account-view.js';
import { expiryOfGrant } from '../accounts/plan-change.js';
import type { AccountStore } from '../accounts/store.js';
import type { Account } from '../accounts/types.js';
import { generateApiKey, hashApiKey, looksLikeApiKey } from '../auth/keys.js';
import type { Clock } from '../clock.js';
import { PLAN_NAMES, type PlanName } from '../plans.js';
import { isoUtc, utcDay } from '../time.js';

/**
 * The operator commands behind `npm run admin` (scripts/admin.ts parses argv and prints):
 *   create-account [--email E] [--plan P]     a new account; its key is shown this once
 *   set-plan <key|account-id> <plan> [--days N]  the plan starts now for N days (default: its duration)
 *   show <key|account-id>
 * Each returns the JSON object to print; a UsageError carries a message for the operator.
 */
export class UsageError extends Error {}

export const ADMIN_USAGE = `usage:
  npm run admin -- create-account [--email E] [--plan ${PLAN_NAMES.join('|')}]
  npm run admin -- set-plan <key|account-id> <plan> [--days N]
  npm run admin -- show <key|account-id>`;

interface AdminDeps {
  accounts: AccountStore;
  clock: Clock;
  apiKeyPrefix: string;
}

export async function runAdminCommand(argv: string[], deps: AdminDeps): Promise<Record<string, unknown>> {
  const { positional, options } = parseArgs(argv);
  const [command, ...rest] = positional;
  switch (command) {
    case 'create-account':
      expectArgs(rest, 0, options, ['email', 'plan']);
      return createAccount(deps, options.email ?? null, parsePlan(options.plan ?? 'free'));
    case 'set-plan': {
      expectArgs(rest, 2, options, ['days']);
      const account = await resolveAccount(deps, rest[0]);
      const plan = parsePlan(rest[1]);
      const days = options.days === undefined ? undefined : parseDays(options.days);
      const updated = await deps.accounts.setPlan(account.id, plan, expiryOfGrant(plan, deps.clock.now(), days));
      return describe(deps, updated);
    }
    case 'show':
      expectArgs(rest, 1, options, []);
      return describe(deps, await resolveAccount(deps, rest[0]));
    default:
      throw new UsageError(command ? `unknown command "${command}"\n${ADMIN_USAGE}` : ADMIN_USAGE);
  }
}

async function createAccount(deps: AdminDeps, email: string | null, plan: PlanName) {
  if (email !== null && !z.email().max(254).safeParse(email).success) throw new UsageError(`--email "${email}" is not an e-mail address`);
  const now = deps.clock.now();
  const apiKey = generateApiKey(deps.apiKeyPrefix);
  const account = await deps.accounts.createAccount({ email, keyHash: hashApiKey(apiKey), plan, plan_expires_at: expiryOfGrant(plan, now), now });
  return { api_key: apiKey, note: 'The key is shown only this once; only its hash is stored.', ...(await describe(deps, account)) };
}

async function describe(deps: AdminDeps, account: Account) {
  const now = deps.clock.now();
  return { ...accountView(account, now, await deps.accounts.getDaily(account.id, utcDay(now))), created_at: isoUtc(account.created_at) };
}

async function resolveAccount(deps: AdminDeps, ref: string): Promise<Account> {
  let account: Account | null;
  if (looksLikeApiKey(ref, deps.apiKeyPrefix)) account = await deps.accounts.findByKeyHash(hashApiKey(ref));
  else if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ref)) account = await deps.accounts.getAccount(ref.toLowerCase());
  else throw new UsageError(`${shown(ref)} is neither an API key (${deps.apiKeyPrefix}live_…) nor an account id (UUID)`);
  if (!account) throw new UsageError(`no account for ${ref.includes('live_') ? 'that key' : ref}`);
  return account;
}

/**
 * An argument that is no key and no account id, as the error quotes it: whole when short, else its
 * first 8 characters and its length. It may be a key mistyped by a character, which the terminal's
 * scrollback and a CI log would otherwise keep (issue 35).
 */
function shown(ref: string): string {
  return ref.length <= 12 && !ref.includes('_live_') ? `"${ref}"` : `"${ref.slice(0, 8)}…" (${ref.length} characters)`;
}

function parsePlan(raw: string): PlanName {
  if (!(PLAN_NAMES as string[]).includes(raw)) throw new UsageError(`plan must be one of ${PLAN_NAMES.join(', ')}; got "${raw}"`);
  return raw as PlanName;
}

function parseDays(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 36_500) throw new UsageError(`--days must be an integer between 1 and 36500; got "${raw}"`);
  return Number(raw);
}

function parseArgs(argv: string[]) {
  const positional: string[] = [];
  const options: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    if (eq > 0) options[arg.slice(2, eq)] = arg.slice(eq + 1);
    else if (i + 1 < argv.length) options[arg.slice(2)] = argv[++i];
    else throw new UsageError(`${arg} needs a value`);
  }
  return { positional, options };
}

function expectArgs(rest: string[], count: number, options: Record<string, string>, allowed: string[]) {
  if (rest.length !== count) throw new UsageError(ADMIN_USAGE);
  const unknown = Object.keys(options).find((o) => !allowed.includes(o));
  if (unknown) throw new UsageError(`unknown option --${unknown}\n${ADMIN_USAGE}`);
}
