"""Bench: a day through the real `tardis_dev.replay` (docs/TARDIS.md §2), messages received per second.

    python3 clients/python/bench/bench_tardis.py --url http://127.0.0.1:8080 --key th_... --assets ID,ID,... --day 2026-08-31

Replays every channel of the assets for the UTC day with a fresh cache, decoding each message as the
client does by default, and counts what the async iterator yields. The last stdout line is a JSON
object for scripts/bench/tardis.ts. Needs `pip install tardis-dev`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import tempfile
import time

import tardis_dev
from tardis_dev import Channel

CHANNELS = ["book", "price_change", "last_trade_price"]


async def replay(url: str, key: str, assets: list[str], day: dt.date, cache: str) -> int:
    count = 0
    async for _ in tardis_dev.replay(
        exchange="polymarket",
        from_date=day.isoformat(),
        to_date=(day + dt.timedelta(days=1)).isoformat(),
        filters=[Channel(c, assets) for c in CHANNELS],
        endpoint=url.rstrip("/") + "/v1/tardis",
        api_key=key,
        cache_dir=cache,
    ):
        count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--assets", required=True)
    parser.add_argument("--day", required=True)
    args = parser.parse_args()
    day = dt.date.fromisoformat(args.day)
    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        messages = asyncio.run(replay(args.url, args.key, args.assets.split(","), day, cache))
        seconds = time.perf_counter() - started
    print(json.dumps({"messages": messages, "seconds": seconds, "messages_per_s": messages / seconds}))


if __name__ == "__main__":
    main()
