/**
 * A process killed in the middle of a Parquet export (test/interrupted-work.test.ts): opens the
 * embedded engine on argv[2], starts a Parquet export of a few thousand generated rows, reads its
 * first chunk, prints "spooling", and waits to be killed.
 */
import { EmbeddedEngine } from '../../src/clickhouse/embedded.js';

const engine = EmbeddedEngine.open(process.argv[2], 1);
const out = engine.stream('SELECT number AS n, toString(number) AS s FROM numbers(200000)', 'Parquet');
out.once('readable', () => {
  out.read();
  process.stdout.write('spooling\n');
});
setInterval(() => {}, 60_000);
