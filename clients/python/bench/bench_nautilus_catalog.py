"""Time ``Client.to_nautilus`` over one token's whole history: ticks read per second, objects written per
second, and the peak RSS of this Python process (README "Backtesting in NautilusTrader" has figures).

    python clients/python/bench/bench_nautilus_catalog.py [asset_id]

TICKHOUSE_URL and TICKHOUSE_API_KEY name the service; without an asset it takes the token with the most
ticks (the largest bench asset when the service holds the bench dataset of ``npm run bench``).
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import tickhouse
from tickhouse import nautilus


def main() -> None:
    client = tickhouse.Client(os.environ.get("TICKHOUSE_URL", "http://localhost:8080"), os.environ.get("TICKHOUSE_API_KEY"))
    top = client.markets(limit=1).iloc[0] if len(sys.argv) < 2 else client.markets(sys.argv[1]).iloc[0]
    asset_id = sys.argv[1] if len(sys.argv) > 1 else str(top["asset_id"])
    markets = client.markets()
    row = markets[markets["asset_id"] == asset_id].iloc[0]
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # after importing NautilusTrader
    with tempfile.TemporaryDirectory(prefix="tickhouse-bench-") as tmp:
        started = time.perf_counter()
        result = client.to_nautilus(asset_id, row["first_seen"], row["last_seen"], Path(tmp) / "catalog", progress=False)
        elapsed = time.perf_counter() - started
        size = sum(f.stat().st_size for f in Path(tmp).rglob("*.parquet"))
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    objects = result.deltas + result.trades
    print(
        f"asset {asset_id[:16]}…: {result.ticks:,} ticks → {result.deltas:,} deltas + {result.trades:,} trades in {elapsed:.1f} s: "
        f"{result.ticks / elapsed:,.0f} ticks/s, {objects / elapsed:,.0f} objects/s; catalog {size / 1e6:.1f} MB; "
        f"peak RSS {peak_kb / 1024:.0f} MB (after imports {baseline_kb / 1024:.0f} MB; chunk {nautilus.CHUNK_OBJECTS:,} objects)"
    )


if __name__ == "__main__":
    main()
