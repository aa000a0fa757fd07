"""Tardis's own tools against the live service (docs/TARDIS.md): the real `tardis-dev` client downloads
and replays, hftbacktest converts and replays the downloaded files, and what comes out is compared with
the service's own answers (/v1/orderbook, the replay WebSocket). Nothing here is mocked.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import json
import math
import random
from pathlib import Path
from typing import Any

import httpx
import pytest
import tardis_dev
from conftest import Live
from tardis_dev import Channel
from websockets.sync.client import connect

import tickhouse

SAMPLES = 200


@pytest.fixture(scope="module")
def day(live: Live, big_asset: dict[str, Any]) -> dt.date:
    """The last complete UTC day of the demo data (the demo ends now, so it is yesterday)."""
    requires_path(live)
    return (dt.datetime.fromtimestamp(int(big_asset["last"]) / 1000, dt.UTC) - dt.timedelta(days=1)).date()


def requires_path(live: Live) -> None:
    if "/v1/tardis/datasets/{exchange}/{data_type}/{year}/{month}/{day}/{file}" not in live.paths:
        pytest.skip("the Tardis routes are not in this service's /v1/openapi.json")


@pytest.fixture(scope="module")
def files(live: Live, client: tickhouse.Client, big_asset: dict[str, Any], day: dt.date, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The real client's download of the day's trades and incremental_book_L2 of the biggest asset."""
    directory = tmp_path_factory.mktemp("tardis")
    asset = str(big_asset["asset_id"])
    tardis_dev.download_datasets(
        exchange="polymarket",
        data_types=["trades", "incremental_book_L2"],
        symbols=[asset],
        from_date=day.isoformat(),
        to_date=(day + dt.timedelta(days=1)).isoformat(),
        endpoint=client.tardis_endpoint.datasets,
        api_key=live.key,
        download_dir=str(directory),
    )
    return {kind: directory / f"polymarket_{kind}_{day.isoformat()}_{asset}.csv.gz" for kind in ("trades", "incremental_book_L2")}


def test_endpoint(client: tickhouse.Client) -> None:
    assert client.tardis_endpoint == tickhouse.TardisEndpoint(
        datasets=client.base_url.rstrip("/") + "/v1/tardis/datasets", replay=client.base_url.rstrip("/") + "/v1/tardis"
    )


def rows(path: Path) -> list[list[str]]:
    with gzip.open(path, "rt", encoding="ascii") as f:
        lines = f.read().split("\n")
    assert lines.pop() == ""
    return [line.split(",") for line in lines]


def service_book(raw: httpx.Client, asset: str, ms: int) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    data = raw.get("/v1/orderbook", params={"asset_id": asset, "timestamp": ms, "limit": 100}).json()["data"]
    return [(float(lv["price"]), float(lv["size"])) for lv in data["bids"]], [(float(lv["price"]), float(lv["size"])) for lv in data["asks"]]


def test_download_rebuilds_the_service_book(files: dict[str, Path], raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    """Tardis's documented rebuild of incremental_book_L2 equals /v1/orderbook at 200 sampled instants."""
    asset = str(big_asset["asset_id"])
    table = rows(files["incremental_book_L2"])
    assert table[0] == ["exchange", "symbol", "timestamp", "local_timestamp", "is_snapshot", "side", "price", "amount"]
    body = table[1:]
    times = sorted({int(r[2]) for r in body})
    assert len(times) > SAMPLES
    wanted = set(random.Random(28).sample(times, SAMPLES))
    bids: dict[float, float] = {}
    asks: dict[float, float] = {}
    last_snapshot = False
    checked = 0
    for i, (exchange, symbol, ts, _local, is_snapshot, side, price, amount) in enumerate(body):
        assert (exchange, symbol) == ("polymarket", asset)
        if is_snapshot == "true" and not last_snapshot:
            bids.clear()
            asks.clear()
        last_snapshot = is_snapshot == "true"
        levels = bids if side == "bid" else asks
        if float(amount) == 0:
            levels.pop(float(price), None)
        else:
            levels[float(price)] = float(amount)
        if int(ts) in wanted and (i + 1 == len(body) or body[i + 1][2] != ts):
            ms = int(ts) // 1000
            mine = sorted(bids.items(), reverse=True)[:100], sorted(asks.items())[:100]
            assert (ms, mine) == (ms, service_book(raw, asset, ms))
            checked += 1
    assert checked == SAMPLES


def test_hftbacktest_conversion_replays_the_service_book(files: dict[str, Path], raw: httpx.Client, big_asset: dict[str, Any], tmp_path: Path) -> None:
    """hftbacktest's own converter and depth: best bid/ask and every level equal /v1/orderbook at 200 instants."""
    from hftbacktest import BacktestAsset, HashMapMarketDepthBacktest
    from hftbacktest.data.utils import tardis

    asset = str(big_asset["asset_id"])
    # Trades first, as hftbacktest documents.
    tardis.convert([str(files["trades"]), str(files["incremental_book_L2"])], output_filename=str(tmp_path / "day.npz"))
    times = sorted({int(r[2]) // 1000 for r in rows(files["incremental_book_L2"])[1:]})
    samples = sorted(random.Random(280).sample(times[1:-1], SAMPLES))
    tick = 0.001
    hbt_asset = (
        BacktestAsset()
        .data([str(tmp_path / "day.npz")])
        .linear_asset(1.0)
        .constant_order_latency(0, 0)
        .risk_adverse_queue_model()
        .no_partial_fill_exchange()
        .trading_value_fee_model(0.0, 0.0)
        .tick_size(tick)
        .lot_size(0.01)
        .last_trades_capacity(0)
    )
    hbt = HashMapMarketDepthBacktest([hbt_asset])
    try:
        hbt.elapse(1)
        for ms in samples:
            # Half a millisecond after: every event of that millisecond is in (times are µs, whole ms here).
            target = ms * 1_000_000 + 500_000
            if hbt.current_timestamp < target:
                hbt.elapse(target - hbt.current_timestamp)
            depth = hbt.depth(0)
            mine_bids = sorted(((round(t * tick, 3), depth.bid_qty_at_tick(t)) for t in range(1, 1000) if depth.bid_qty_at_tick(t) > 0), reverse=True)
            mine_asks = sorted((round(t * tick, 3), depth.ask_qty_at_tick(t)) for t in range(1, 1000) if depth.ask_qty_at_tick(t) > 0)
            bids, asks = service_book(raw, asset, ms)
            best = (bids[0][0] if bids else None, asks[0][0] if asks else None)
            mine_best = tuple(None if math.isnan(p) else round(p, 3) for p in (depth.best_bid, depth.best_ask))
            assert (ms, mine_best) == (ms, best)
            assert (ms, [p for p, _ in mine_bids[:100]], [p for p, _ in mine_asks[:100]]) == (ms, [p for p, _ in bids], [p for p, _ in asks])
            assert [q for _, q in mine_bids[:100] + mine_asks[:100]] == pytest.approx([q for _, q in bids + asks])
    finally:
        hbt.close()


def ws_messages(live: Live, asset: str, lo: int, hi: int) -> list[dict[str, Any]]:
    """The replay WebSocket's messages for events with lo ≤ t < hi, its opening book array left out."""
    url = live.url.replace("http", "ws", 1) + f"/v1/replay/market?from={lo - 1}&to={hi - 1}&speed=max"
    out: list[dict[str, Any]] = []
    with connect(url, additional_headers={"Authorization": f"Bearer {live.key}"}, max_size=None) as ws:
        ws.send(json.dumps({"assets_ids": [asset], "type": "market", "custom_feature_enabled": True}))
        for i, frame in enumerate(ws):
            message = json.loads(frame)
            if not (i == 0 and isinstance(message, list)):
                out.append(message)
    return out


def captured_window(raw: httpx.Client, asset: str, day: dt.date, minutes: int) -> dt.datetime:
    """The start (naive UTC, whole minute) of a `minutes` window of `day` inside one captured interval of
    the asset (docs/TIME-MACHINE.md §4): the demo's capture story leaves parts of its days unrecorded
    (a day 'missing', an outage after 10:00 on the day before the last), and a replay has nothing there."""
    lo = int(dt.datetime.combine(day, dt.time(0), dt.UTC).timestamp() * 1000)
    coverage = raw.get("/v1/coverage", params={"asset_id": asset, "start": lo, "end": lo + 86_400_000}).json()["data"]
    span = minutes * 60_000
    fits = [c for c in coverage["captured"] if c["to"] - c["from"] >= span + 120_000]
    assert fits, coverage
    best = max(fits, key=lambda c: c["to"] - c["from"])
    # The middle of the longest captured interval, on a whole minute.
    t = (best["from"] + (best["to"] - best["from"] - span) // 2) // 60_000 * 60_000
    assert best["from"] <= t and t + span <= best["to"]
    return dt.datetime.fromtimestamp(t / 1000, dt.UTC).replace(tzinfo=None)


def test_replay_yields_the_replay_websocket_messages(
    live: Live, client: tickhouse.Client, raw: httpx.Client, big_asset: dict[str, Any], day: dt.date, tmp_path: Path
) -> None:
    """tardis_dev.replay over 30 minutes of captured data: the replay WebSocket's messages, in order, with receive times."""
    asset = str(big_asset["asset_id"])
    start = captured_window(raw, asset, day, 30)
    end = start + dt.timedelta(minutes=30)
    channels = ["book", "price_change", "last_trade_price", "tick_size_change", "best_bid_ask", "new_market", "market_resolved"]

    async def collect() -> list[tuple[dt.datetime, Any]]:
        return [
            (r.local_timestamp, r.message)
            async for r in tardis_dev.replay(
                exchange="polymarket",
                from_date=start.isoformat(),
                to_date=end.isoformat(),
                filters=[Channel(name, [asset]) for name in channels],
                endpoint=client.tardis_endpoint.replay,
                api_key=live.key,
                cache_dir=str(tmp_path),
            )
        ]

    got = asyncio.run(collect())
    lo = int(start.replace(tzinfo=dt.UTC).timestamp() * 1000)
    want = ws_messages(live, asset, lo, lo + 30 * 60_000)
    assert len(want) > 100
    assert [m for _, m in got] == want
    # Receive times: never before the exchange's time, in order, inside the window.
    stamps = [local for local, _ in got]
    assert stamps == sorted(stamps)
    for local, message in got:
        assert local >= dt.datetime.fromtimestamp(int(message["timestamp"]) / 1000, dt.UTC).replace(tzinfo=None)
        assert start <= local < end + dt.timedelta(minutes=1)
