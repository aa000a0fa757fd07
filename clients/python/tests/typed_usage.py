"""A user's script, checked by mypy --strict in test_typed.py (never run): every value the client hands
back has a concrete type, so mistakes in code like this are caught before it runs."""

from __future__ import annotations

from typing import Literal, assert_type

import pandas as pd
import polars as pl
import pyarrow as pa

import tickhouse

client = tickhouse.Client("http://localhost:8080")
asset: str = client.markets(limit=1)["asset_id"].iloc[0]
now = pd.Timestamp.now("UTC")

ticks = client.ticks(asset, now - pd.Timedelta(hours=6), now)
assert_type(ticks, pd.DataFrame)
assert_type(client.ticks(asset, now - pd.Timedelta(hours=6), now, as_="polars"), pl.DataFrame)
assert_type(client.ticks(asset, "2026-11-24T08:00:00Z", now, "price_change", as_="arrow", via="parquet"), pa.Table)
assert_type(client.ticks(asset, now - pd.Timedelta(hours=1), now, fields="all", as_="polars"), pl.DataFrame)
assert_type(client.candles(asset, "1m", start=now - pd.Timedelta(hours=1)), pd.DataFrame)
assert_type(client.candles(asset, limit=24, as_="polars"), pl.DataFrame)
assert_type(client.books(asset, now - pd.Timedelta(minutes=5), now, depth=5, as_="arrow"), pa.Table)
assert_type(tickhouse.Client.read_export("ticks.parquet", as_="polars"), pl.DataFrame)
assert_type(client.prices_history(asset, now - pd.Timedelta(days=1), now), pd.DataFrame)

spread: float = client.price(asset)["spread"]
cost = client.execution_price(asset, "BUY", 500)
assert_type(cost["average_price"], float | None)
assert_type(client.me()["requests_today"], int)
assert_type(client.coverage(asset, now - pd.Timedelta(days=3), now)["days"][0]["condition"], Literal["available", "degraded", "missing", "unknown"])
assert_type(client.book(asset).bids, pd.DataFrame)
instrument = client.instrument(asset, now - pd.Timedelta(days=1))
assert_type(instrument["fees"]["rate"], float | None)
assert_type(instrument["source"]["tick_size"], Literal["history", "metadata", "default"])

for event in client.replay([asset], now - pd.Timedelta(minutes=10), now, speed="max"):
    if event["event_type"] == "price_change":
        assert_type(event["price_changes"][0]["best_bid"], str)
    elif event["event_type"] == "book":
        assert_type(event["bids"][0]["price"], str)
    else:
        assert_type(event["size"], str)

try:
    client.book(asset, at=0)
except tickhouse.NotFound as e:
    assert_type(e.status, int)
except tickhouse.TickhouseError as e:
    assert_type(e.code, str | None)
