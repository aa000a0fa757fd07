"""A small market channel in Polymarket's wire format (docs/INGEST.md §1, §3), built for the cases the
demo data never has: empty sides, one-sided and empty re-sent books, several items of one message
(and of two tokens) at one millisecond, exchange times that go back while receive times go on, prices
finer than the stated tick, trades with both taker sides. Written as a frame file with receive-time
prefixes, ingested by ``npm run ingest -- replay`` into a service of its own (``market_service``)."""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import httpx
import pytest
from service import REPO, TSX, Service, create_account

import tickhouse

MARKET = "0x" + "3a" * 32
YES = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
NO = "52114319501245915516055106046884209969926127482827954674443846427813813222519"
T0 = 1_795_000_000_000  # 2026-11-19, inside every plan window of the tests' unlimited key


def _stamp(ms: float) -> str:
    """The frame-line prefix: ISO 8601 UTC with 7 decimals."""
    whole = datetime.fromtimestamp(int(ms // 1000), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{whole}.{int(round((ms % 1000) * 10_000)):07d}Z"


def _levels(rng: random.Random, low: int, high: int, n: int) -> list[dict[str, str]]:
    return [{"price": f"{p / 100:g}", "size": f"{rng.randint(1, 5000) / 100:g}"} for p in sorted(rng.sample(range(low, high), n))]


def _book(asset: str, t: int, bids: list[dict[str, str]], asks: list[dict[str, str]]) -> dict[str, object]:
    return {"market": MARKET, "asset_id": asset, "timestamp": str(t), "hash": "h", "bids": bids, "asks": list(reversed(asks)), "event_type": "book"}


def frames() -> list[tuple[float, object]]:
    """(receive ms, frame) in arrival order."""
    rng = random.Random(30)
    out: list[tuple[float, object]] = []
    t = T0
    received = float(T0) + 0.25
    out.append((received, [_book(YES, t, _levels(rng, 30, 48, 8), _levels(rng, 52, 70, 8)), _book(NO, t, _levels(rng, 30, 48, 5), _levels(rng, 52, 70, 5))]))
    asks_alive = True
    for i in range(1, 400):
        t += rng.choice([0, 0, 1, 7, 40, 250]) + (40 if i in (150, 151, 152) else 0)  # each of the odd books alone in its ms
        received += rng.choice([0.113, 0.5, 3.0])
        # Now and then a frame whose exchange time is 5 ms behind the one before (arrival order differs).
        stamp_t = t - 5 if i % 37 == 0 else t
        if i in (90, 260):
            out.append((received, _book(YES, stamp_t, _levels(rng, 35, 49, 6), _levels(rng, 51, 65, 6))))
        elif i == 150:
            out.append((received, _book(YES, stamp_t, [], [])))  # an empty book
        elif i == 151:
            out.append((received, _book(YES, stamp_t, _levels(rng, 40, 45, 3), [])))  # bids only
        elif i % 11 == 0:
            out.append((received, _trade(rng, stamp_t)))
        elif i in (120, 320):
            # Remove every ask level of the current book side by side, in one message: the ask side empties.
            items = [{"asset_id": YES, "price": f"{p / 1000:g}", "size": "0", "side": "SELL", "hash": "h"} for p in range(490, 710, 5)]
            out.append((received, {"market": MARKET, "timestamp": str(stamp_t), "event_type": "price_change", "price_changes": items}))
            asks_alive = False
        else:
            items = []
            for _ in range(rng.choice([1, 1, 2, 3])):
                bid = rng.random() < 0.5 or not asks_alive and rng.random() < 0.5
                cents = rng.randint(36, 48) if bid else rng.randint(52, 64)
                price = f"{cents / 100:g}" if rng.random() < 0.85 else f"{(cents * 10 + 5) / 1000:g}"  # a finer tick now and then
                size = "0" if rng.random() < 0.25 else f"{rng.randint(1, 900000) / 10000:g}"
                items.append({"asset_id": YES if rng.random() < 0.8 else NO, "price": price, "size": size, "side": "BUY" if bid else "SELL", "hash": "h"})
            asks_alive = asks_alive or any(x["side"] == "SELL" and x["size"] != "0" and x["asset_id"] == YES for x in items)
            out.append((received, {"market": MARKET, "timestamp": str(stamp_t), "event_type": "price_change", "price_changes": items}))
    return out


def _trade(rng: random.Random, t: int) -> dict[str, object]:
    return {
        "asset_id": YES,
        "market": MARKET,
        "price": f"{rng.randint(40, 60) / 100:g}",
        "side": rng.choice(["BUY", "SELL"]),
        "size": f"{rng.randint(1, 50000) / 100:g}",
        "fee_rate_bps": "0",
        "timestamp": str(t),
        "transaction_hash": "0x" + f"{rng.getrandbits(256):064x}",
        "event_type": "last_trade_price",
    }


def write(path: Path) -> Path:
    with open(path, "w") as f:
        for received, frame in frames():
            f.write(f"{_stamp(received)} {json.dumps(frame, separators=(',', ':'))}\n")
    return path


@pytest.fixture(scope="module")
def frames_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, httpx.Client, tickhouse.Client]]:
    """A service of its own holding only market_frames' channel, ingested from its frame file."""
    root = tmp_path_factory.mktemp("frames")
    service = Service(root / "data", {"DEMO_DATA": "0"})
    file = write(root / "frames.txt")
    done = subprocess.run([str(TSX), "scripts/ingest.ts", "replay", str(file)], cwd=REPO, env=service.env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    key = create_account(service.env, "unlimited")
    service.start()
    try:
        with httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http, tickhouse.Client(service.url, key) as c:
            yield service.url, http, c
    finally:
        service.stop()
