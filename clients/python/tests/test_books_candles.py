"""Books, candles, prices and the docs/TIME-MACHINE.md endpoints against the live service.

Tests of /v1/orderbook/export, /v1/coverage and /v1/replay/market are gated by `requires_path`: they
run as soon as the live service's /v1/openapi.json lists the path (other work adds these endpoints).
"""

from __future__ import annotations

import math
import time
from typing import Any

import httpx
import pandas as pd
import pandas.testing as pdt
import pytest
from conftest import Live, requires_path
from reference import json_walk

import tickhouse

RES_MS = {"1m": 60_000, "1h": 3_600_000}


def levels(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame({"price": pd.Series([r["price"] for r in rows], dtype="float64"), "size": pd.Series([r["size"] for r in rows], dtype="float64")})


def assert_book_equals(book: tickhouse.Book, data: dict[str, Any]) -> None:
    assert (book.market, book.asset_id, book.best_bid, book.best_ask) == (data["market"], data["asset_id"], data["best_bid"], data["best_ask"])
    assert book.timestamp == pd.Timestamp(data["timestamp"], unit="ms", tz="UTC")
    pdt.assert_frame_equal(book.bids, levels(data["bids"]), check_exact=True)
    pdt.assert_frame_equal(book.asks, levels(data["asks"]), check_exact=True)


def test_book_equals_the_json_api(client: tickhouse.Client, raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    at = (big_asset["first"] + big_asset["last"]) // 2
    data = raw.get("/v1/orderbook", params={"asset_id": big_asset["asset_id"], "timestamp": at, "limit": 100}).raise_for_status().json()["data"]
    assert data["bids"] and data["asks"]
    assert_book_equals(client.book(big_asset["asset_id"], at, limit=100), data)
    latest = raw.get("/v1/orderbook", params={"asset_id": big_asset["asset_id"]}).raise_for_status().json()["data"]
    assert_book_equals(client.book(big_asset["asset_id"]), latest)


def test_book_range_equals_the_json_api(client: tickhouse.Client, raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    params = {"asset_id": big_asset["asset_id"], "since": big_asset["first"], "until": big_asset["last"], "limit": 50, "depth": 5, "interval": 3_600_000}
    data = raw.get("/v1/orderbook/range", params=params).raise_for_status().json()["data"]
    books = client.book_range(big_asset["asset_id"], big_asset["first"], big_asset["last"], limit=50, depth=5, interval=3_600_000)
    assert len(books) == len(data) == 50
    for book, expected in zip(books, data, strict=True):
        assert_book_equals(book, expected)


def candle_model(ticks: list[dict[str, Any]], res_ms: int) -> pd.DataFrame:
    """docs/API.md /v1/ohlcv from raw ticks: price_change only, best_bid open/high/low/close, count as volume,
    UTC-aligned buckets, empty buckets omitted."""
    buckets: dict[int, list[float]] = {}
    for tick in ticks:  # ascending by t, then arrival: the walk's order
        if tick["event"] == "price_change":
            buckets.setdefault(tick["t"] // res_ms * res_ms, []).append(tick["best_bid"])
    starts = sorted(buckets)
    return pd.DataFrame(
        {
            "timestamp": pd.Series(pd.to_datetime(starts, unit="ms", utc=True), dtype="datetime64[ms, UTC]"),
            "open": pd.Series([buckets[s][0] for s in starts], dtype="float64"),
            "high": pd.Series([max(buckets[s]) for s in starts], dtype="float64"),
            "low": pd.Series([min(buckets[s]) for s in starts], dtype="float64"),
            "close": pd.Series([buckets[s][-1] for s in starts], dtype="float64"),
            "volume": pd.Series([len(buckets[s]) for s in starts], dtype="int64"),
        }
    )


@pytest.fixture(scope="module")
def all_ticks(raw: httpx.Client, big_asset: dict[str, Any]) -> list[dict[str, Any]]:
    return json_walk(raw, {"asset_id": big_asset["asset_id"], "start": big_asset["first"], "end": big_asset["last"]}, 100_000)


@pytest.mark.parametrize("resolution", ["1m", "1h"])
def test_candles_equal_the_json_api_and_the_model_from_ticks(
    client: tickhouse.Client, raw: httpx.Client, big_asset: dict[str, Any], all_ticks: list[dict[str, Any]], resolution: str
) -> None:
    start = big_asset["first"] // RES_MS[resolution] * RES_MS[resolution]
    frame = client.candles(big_asset["asset_id"], resolution, start, big_asset["last"])  # type: ignore[arg-type]
    model = candle_model(all_ticks, RES_MS[resolution])
    if resolution == "1m":
        assert len(model) > 1000  # more than one page of /v1/ohlcv: the client walks them
    pdt.assert_frame_equal(frame, model, check_exact=True)
    # The JSON API's own pages, concatenated, are that frame too.
    page = (
        raw.get("/v1/ohlcv", params={"asset_id": big_asset["asset_id"], "resolution": resolution, "start": start, "end": big_asset["last"], "limit": 1000})
        .raise_for_status()
        .json()["data"]
    )
    head = frame.head(len(page))
    assert [int(t.value // 1_000_000) for t in head["timestamp"]] == [c["timestamp"] for c in page]
    assert head[["open", "high", "low", "close", "volume"]].to_dict("records") == [{k: c[k] for k in ("open", "high", "low", "close", "volume")} for c in page]


def test_candles_without_start_are_the_services_selection(client: tickhouse.Client, raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    page = raw.get("/v1/ohlcv", params={"asset_id": big_asset["asset_id"], "resolution": "1h", "limit": 7}).raise_for_status().json()["data"]
    frame = client.candles(big_asset["asset_id"], "1h", limit=7, as_="arrow")
    assert frame.to_pylist() == [{**c, "timestamp": pd.Timestamp(c["timestamp"], unit="ms", tz="UTC").to_pydatetime()} for c in page]


def test_prices_history_equals_the_json_api(client: tickhouse.Client, raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    params = {"asset_id": big_asset["asset_id"], "start": big_asset["first"], "end": big_asset["last"], "fidelity": 600, "limit": 10_000}
    data = raw.get("/v1/prices-history", params=params).raise_for_status().json()["data"]
    frame = client.prices_history(big_asset["asset_id"], big_asset["first"], big_asset["last"], fidelity=600, limit=10_000)
    expected = pd.DataFrame(
        {"t": pd.to_datetime(pd.Series([p["t"] for p in data], dtype="int64"), unit="s", utc=True), "p": pd.Series([p["p"] for p in data], dtype="float64")}
    )
    pdt.assert_frame_equal(frame, expected, check_exact=True)


def test_price_and_execution_price_are_the_json_answers(client: tickhouse.Client, raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    at = big_asset["last"]
    assert client.price(big_asset["asset_id"], at) == raw.get("/v1/price", params={"asset_id": big_asset["asset_id"], "timestamp": at}).json()["data"]
    expected = raw.get("/v1/execution-price", params={"asset_id": big_asset["asset_id"], "side": "BUY", "amount": 250.5, "timestamp": at}).json()["data"]
    assert client.execution_price(big_asset["asset_id"], "BUY", 250.5, at) == expected


def test_markets_walks_every_page(client: tickhouse.Client, raw: httpx.Client) -> None:
    data = raw.get("/v1/markets", params={"limit": 1000}).json()["data"]
    frame = client.markets()
    assert list(frame["asset_id"]) == [m["asset_id"] for m in data]
    assert list(frame["total_ticks"]) == [m["total_ticks"] for m in data]
    assert frame["first_seen"].iloc[0] == pd.Timestamp(data[0]["first_seen"], tz="UTC")
    assert list(client.markets(limit=5)["asset_id"]) == [m["asset_id"] for m in data[:5]]


def test_account_methods(live: Live) -> None:
    with tickhouse.Client(live.url, api_key="") as anonymous:
        key = anonymous.register(email="quant@example.com")["api_key"]
        assert anonymous.api_key == key and anonymous.me()["email"] == "quant@example.com"  # the client uses its new key
    with tickhouse.Client(live.url, key) as c:
        me = c.me()
        assert (me["email"], me["plan"]) == ("quant@example.com", "free")
        assert c.billing_status()["plan"] == "free"
        invoice = c.subscribe("daily")
        assert (invoice["plan"], invoice["amount_usd"]) == ("daily", 1.0)
        new_key = c.regenerate_key()
        assert c.api_key == new_key != key and c.me()["id"] == me["id"]
    with tickhouse.Client(live.url, key) as old, pytest.raises(tickhouse.InvalidApiKey):
        old.me()


# --- docs/TIME-MACHINE.md endpoints, gated on the live OpenAPI -----------------------------------------


def test_books_rows_are_the_orderbook_at_their_time(live: Live, client: tickhouse.Client, raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    requires_path(live, "/v1/orderbook/export")
    start, end, depth = big_asset["first"], big_asset["first"] + 3_600_000, 5
    for interval in (None, 60_000):
        frame = client.books(big_asset["asset_id"], start, end, depth=depth, interval=interval)
        columns = ["timestamp", "best_bid", "best_ask"] + [f"{s}_{k}_{i}" for s in ("bid", "ask") for i in range(depth) for k in ("price", "size")]
        assert list(frame.columns) == columns
        assert str(frame["timestamp"].dtype) == "datetime64[ms, UTC]" and frame["timestamp"].is_monotonic_increasing
        assert len(frame) > 10
        if interval:
            times = [int(t.value // 1_000_000) for t in frame["timestamp"]]
            assert all(t % interval == 0 for t in times) and times == list(range(times[0], times[-1] + 1, interval))
        for _, row in frame.iloc[:: max(1, len(frame) // 40)].iterrows():
            t = int(row["timestamp"].value // 1_000_000)
            book = raw.get("/v1/orderbook", params={"asset_id": big_asset["asset_id"], "timestamp": t, "limit": depth}).raise_for_status().json()["data"]
            assert (row["best_bid"], row["best_ask"]) == (book["best_bid"], book["best_ask"])
            for side, key in (("bid", "bids"), ("ask", "asks")):
                for i in range(depth):
                    got = (row[f"{side}_price_{i}"], row[f"{side}_size_{i}"])
                    if i < len(book[key]):
                        assert got == (book[key][i]["price"], book[key][i]["size"])
                    else:  # absent level: null
                        assert all(math.isnan(v) for v in got)


def test_coverage_is_the_json_answer(live: Live, client: tickhouse.Client, raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    requires_path(live, "/v1/coverage")
    # Up to the end of yesterday (UTC): today's day is judged "up to now", which moves between two calls.
    end = min(big_asset["last"], int(time.time() * 1000) // 86_400_000 * 86_400_000 - 1)
    params = {"asset_id": big_asset["asset_id"], "start": big_asset["first"], "end": end}
    expected = raw.get("/v1/coverage", params=params).raise_for_status().json()["data"]
    got = client.coverage(big_asset["asset_id"], big_asset["first"], end)
    assert got == expected
    assert {"asset_id", "start", "end", "captured", "gaps", "reconnects", "books", "drift", "days"} <= set(got)


def test_replay_yields_the_stored_ticks_in_polymarkets_shape(
    live: Live, client: tickhouse.Client, big_asset: dict[str, Any], all_ticks: list[dict[str, Any]]
) -> None:
    requires_path(live, "/v1/replay/market")
    start, end = all_ticks[100]["t"], all_ticks[1100]["t"]
    expected = [(t["t"], t["event"]) for t in all_ticks if start < t["t"] <= end]
    events = list(client.replay([big_asset["asset_id"]], start, end, speed="max"))
    assert (events[0]["event_type"], events[0]["asset_id"]) == ("book", big_asset["asset_id"])  # the book at the replay clock
    got: list[tuple[int, str]] = []
    for e in events[1:]:
        count = len(e["price_changes"]) if e["event_type"] == "price_change" else 1
        got += [(int(e["timestamp"]), e["event_type"])] * count
    assert got == expected
