"""``MarketChannel.to_hftbacktest`` read back by hftbacktest's own reader and order book: its depth at 100 instants is
``/v1/orderbook``'s best levels there, on the demo data and on the frame file with empty sides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("hftbacktest", reason="pip install './clients/python[hftbacktest]'")

import market_frames  # noqa: E402
from hftbacktest import BacktestAsset, HashMapMarketDepthBacktest  # noqa: E402
from hftbacktest.data import validate_event_order  # noqa: E402
from market_frames import frames_service  # noqa: E402, F401  (a fixture)

import tickhouse  # noqa: E402

HOUR = 3_600_000


def _depth_at(client: tickhouse.Client, http: httpx.Client, asset_id: str, start: int, end: int, tmp: Path, instants: int) -> int:
    """hftbacktest's best levels at ``instants`` instants against ``/v1/orderbook`` there: with
    ``local="exchange"`` the strategy's clock is the exchange's, as the service's books are."""
    import numpy as np

    with client.market_channel(asset_id, start, end) as channel:
        result = channel.to_hftbacktest(tmp / "events.npz", local="exchange")
    data = np.load(result.path)["data"]
    assert len(data) == result.rows > 0
    validate_event_order(data)  # raises when exch_ts or local_ts goes back
    asset = (
        BacktestAsset()
        .data([str(result.path)])
        .linear_asset(1.0)
        .constant_order_latency(0, 0)
        .risk_adverse_queue_model()
        .no_partial_fill_exchange()
        .trading_value_fee_model(0.0, 0.0)
        .tick_size(result.tick_size)
        .lot_size(result.lot_size)
    )
    hbt = HashMapMarketDepthBacktest([asset])
    hbt.wait_next_feed(False, 10 * HOUR * 1_000_000)
    checked = 0
    step = (end - start) // instants
    for i in range(1, instants):
        at = start + i * step
        if hbt.elapse(at * 1_000_000 - hbt.current_timestamp) == 1:
            break
        book = http.get("/v1/orderbook", params={"asset_id": asset_id, "timestamp": at, "limit": 1}).json()["data"]
        depth = hbt.depth(0)
        bid = (round(depth.best_bid, 4), round(depth.best_bid_qty, 6)) if book["bids"] else None
        ask = (round(depth.best_ask, 4), round(depth.best_ask_qty, 6)) if book["asks"] else None
        assert bid == ((book["bids"][0]["price"], round(book["bids"][0]["size"], 6)) if book["bids"] else None), at
        assert ask == ((book["asks"][0]["price"], round(book["asks"][0]["size"], 6)) if book["asks"] else None), at
        checked += 1
    hbt.close()
    return checked


def test_hftbacktest_depth_equals_orderbook(client: tickhouse.Client, raw: httpx.Client, big_asset: dict[str, Any], tmp_path: Path) -> None:
    start = int(big_asset["first"]) + HOUR
    assert _depth_at(client, raw, str(big_asset["asset_id"]), start, start + 6 * HOUR, tmp_path, 100) >= 90


def test_hftbacktest_depth_with_empty_sides(frames_service: tuple[str, httpx.Client, tickhouse.Client], tmp_path: Path) -> None:  # noqa: F811
    _, http, c = frames_service
    start = market_frames.T0 + 1
    end = market_frames.T0 + 20_000  # its last event
    assert _depth_at(c, http, market_frames.YES, start, end, tmp_path, 200) >= 190
    # With receive times (the default) both clocks still only go forward, and they differ here.
    import numpy as np

    with c.market_channel(market_frames.YES, start, end) as channel:
        data = np.load(channel.to_hftbacktest(tmp_path / "receive.npz").path)["data"]
    validate_event_order(data)
    assert bool((data["local_ts"] != data["exch_ts"]).any())
