"""Bench: `client.ticks()` into pandas against curl + pyarrow on the same Parquet export, same run.

    python3 clients/python/bench/bench_ticks.py --url http://127.0.0.1:8080 --key th_live_... [--asset ID --start MS --end MS]

Without --asset it takes the service's most active asset over its whole range. Each side runs
--repeat times, alternating; the best time of each is reported (a shared machine's noise only ever
adds time). The last stdout line is a JSON object for scripts/bench/python-client.ts.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import pyarrow.parquet as pq

import tickhouse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--asset")
    parser.add_argument("--start", type=int)
    parser.add_argument("--end", type=int)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    client = tickhouse.Client(args.url, args.key)
    asset, start, end = args.asset, args.start, args.end
    if asset is None:
        top = client.markets(limit=1).iloc[0]
        asset, start, end = top["asset_id"], top["first_seen"], top["last_seen"]
    start_ms, end_ms = tickhouse.to_ms(start), tickhouse.to_ms(end)

    export_url = f"{args.url.rstrip('/')}/v1/ticks/export?" + urlencode({"asset_id": asset, "start": start_ms, "end": end_ms, "format": "parquet"})
    client_times, curl_times = [], []
    rows = 0
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "ticks.parquet"
        for _ in range(args.repeat):
            began = time.perf_counter()
            frame = client.ticks(asset, start_ms, end_ms)
            client_times.append(time.perf_counter() - began)
            rows = len(frame)
            del frame

            began = time.perf_counter()
            subprocess.run(["curl", "-sSf", "-o", str(target), "-H", f"Authorization: Bearer {args.key}", export_url], check=True)
            baseline = pq.read_table(target).to_pandas()
            curl_times.append(time.perf_counter() - began)
            assert len(baseline) == rows, (len(baseline), rows)
            del baseline

    client_rate, curl_rate = rows / min(client_times), rows / min(curl_times)
    print(f"asset {asset}: {rows:,} ticks", file=sys.stderr)
    print(
        f"client.ticks() → pandas:            best {min(client_times):.3f} s  {client_rate:,.0f} rows/s  (runs: {', '.join(f'{t:.3f}' for t in client_times)})",
        file=sys.stderr,
    )
    print(
        f"curl parquet + read_table().to_pandas(): best {min(curl_times):.3f} s  {curl_rate:,.0f} rows/s  (runs: {', '.join(f'{t:.3f}' for t in curl_times)})",
        file=sys.stderr,
    )
    print(f"ratio {client_rate / curl_rate:.2f}", file=sys.stderr)
    print(
        json.dumps(
            {
                "asset_id": asset,
                "rows": rows,
                "client_s": min(client_times),
                "curl_s": min(curl_times),
                "client_rows_per_s": client_rate,
                "curl_rows_per_s": curl_rate,
                "ratio": client_rate / curl_rate,
            }
        )
    )


if __name__ == "__main__":
    main()
