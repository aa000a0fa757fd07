/**
 * `npm run fuzz -- [--seed N] [--cases M] [--only category:index] [--categories schema,framing,websocket]`
 *
 * The fuzz harness of issue 24 (test/support/fuzz/) at a size `npm test` cannot afford: it starts the
 * real service (src/main.ts) as a child process on a loopback port with the demo dataset in a
 * temporary DATA_DIR, then runs M cases per category (schema-driven requests from the live
 * /v1/openapi.json, raw HTTP framing, WebSocket abuse of the replay), checking after each case that
 * the process is alive, answers /healthz within 100 ms, stays under its RSS bound and printed no key,
 * and that every answer is in the contract's shape. Prints each finding as it happens (with the seed
 * and case to replay it: `--seed N --only framing:17`), then the summary line. Exit status 1 when
 * anything was found.
 *
 * Default: a random seed and 10× the cases of `npm test` (test/fuzz-service.test.ts), every bound value.
 */
import { CATEGORIES, type Category, FuzzHarness, findingsDigest, summaryLine } from '../test/support/fuzz/harness.js';
import type { Size } from '../test/support/fuzz/schema-cases.js';
import { FuzzService } from '../test/support/fuzz/service.js';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
for (let i = 0; i < args.length; i += 2) {
  if (!['--seed', '--cases', '--only', '--categories', '--demo-ticks', '--size'].includes(args[i]) || args[i + 1] === undefined) {
    console.error(
      `usage: npm run fuzz -- [--seed N] [--cases M] [--only category:index] [--categories ${CATEGORIES.join(',')}] [--size core|full] [--demo-ticks ` +
        `N]\n(unknown or incomplete option ${args[i]})`,
    );
    process.exit(2);
  }
}
const seed = Number(flag('seed') ?? Math.floor(Math.random() * 2 ** 31));
const only = flag('only');
const categories = (flag('categories')?.split(',') ?? [...CATEGORIES]) as Category[];
// `core`: the bound values and flood sizes of `npm test` (to replay one of its cases); `full`: all of them.
const size = (flag('size') ?? 'full') as Size;
if (size !== 'core' && size !== 'full') {
  console.error('--size is core or full');
  process.exit(2);
}
for (const c of [...categories, ...(only ? [only.split(':')[0]] : [])]) {
  if (!CATEGORIES.includes(c as Category)) {
    console.error(`unknown category ${c}: one of ${CATEGORIES.join(', ')}`);
    process.exit(2);
  }
}

const service = await FuzzService.start({ demoTicks: Number(flag('demo-ticks') ?? 5_000) });
let failed = true;
try {
  const harness = new FuzzHarness(service);
  const ops = await harness.loadDocument();
  const schemaAll = harness.schemaEnumeration(size);
  const m = flag('cases');
  // Without --cases: 10× the cases of `npm test` (test/fuzz-service.test.ts) per category; the schema's
  // go through every bound value (--size full) before they set several parameters at once.
  const perTest = harness.testCases();
  const cases: Partial<Record<Category, number>> = {};
  for (const c of categories) cases[c] = m ? Number(m) : 10 * perTest[c];
  console.log(
    `fuzz: seed ${seed}; service pid ${service.pid} on 127.0.0.1:${service.port}, ${service.facts.assets.length} assets; ` +
      `${ops.length} operations in /v1/openapi.json, ${schemaAll} schema bounds; cases ${JSON.stringify(only ? { only } : cases)}`,
  );
  const report = await harness.run({
    seed,
    cases,
    size,
    only: only ? { category: only.split(':')[0] as Category, index: Number(only.split(':')[1]) } : undefined,
    log: (line) => console.log(line),
    // One case replayed: what was sent and what came back.
    trace: only ? (line) => console.log(line) : undefined,
  });
  if (report.findings.length) console.log(`\nfindings by kind and place (first case of each):\n${findingsDigest(report.findings, 200)}`);
  console.log(`\n${summaryLine(report)}`);
  failed = report.findings.length > 0;
} finally {
  await service.stop();
}
process.exit(failed ? 1 : 0);
