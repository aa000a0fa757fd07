import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { BenchContext, BenchRow } from './types.js';

/**
 * The Python client (clients/python): `client.ticks()` of the largest asset (6 M ticks) into pandas,
 * end to end, against `curl` of the same Parquet export + `pyarrow.parquet.read_table().to_pandas()`,
 * same service, same run (clients/python/bench/bench_ticks.py does both and prints JSON).
 * Targets: ≥ 1,000,000 rows/s, and ratio ≥ 0.7. Needs python3 with `pip install ./clients/python`.
 */
export async function benchPythonClient(ctx: BenchContext): Promise<BenchRow[]> {
  const a = ctx.dataset.largest;
  const script = fileURLToPath(new URL('../../clients/python/bench/bench_ticks.py', import.meta.url));
  const args = [script, '--url', ctx.service.url, '--key', ctx.service.apiKey, '--asset', a.asset_id, '--start', String(a.start), '--end', String(a.end)];
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn('python3', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`bench_ticks.py exited with ${code} (pip install ./clients/python?)`))));
  });
  const r = JSON.parse(out.trim().split('\n').at(-1)!) as { rows: number; client_rows_per_s: number; curl_rows_per_s: number; ratio: number };
  const rate = (n: number) => `${Math.round(n).toLocaleString('en-US')} rows/s`;
  return [
    {
      workload: `python client.ticks() → pandas, ${r.rows.toLocaleString('en-US')} ticks (vs curl parquet + pyarrow)`,
      service: rate(r.client_rows_per_s),
      engine: rate(r.curl_rows_per_s),
      ratio: r.ratio.toFixed(2),
    },
  ];
}
