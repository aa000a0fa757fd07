"""Polymarket's own Python client (py-clob-client) against the CLOB-compatible read API at a past
instant (TIME-MACHINE.md §2): its `host` is `/v1/clob/{key}/at/{instant}`, nothing else changes.

Gated like the other TIME-MACHINE.md endpoints: runs once the live /v1/openapi.json lists a
`/v1/clob/…` path, skipped (saying so) before that.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from conftest import Live


def test_py_clob_client_reads_the_book_and_prices_at_an_instant(live: Live, raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    if not any(p.startswith("/v1/clob/") for p in live.paths):
        pytest.skip("/v1/clob/{key}/at/{instant} is not in this service's /v1/openapi.json yet")
    from py_clob_client.client import ClobClient

    asset, at = big_asset["asset_id"], (big_asset["first"] + big_asset["last"]) // 2
    expected = raw.get("/v1/orderbook", params={"asset_id": asset, "timestamp": at, "limit": 100}).raise_for_status().json()["data"]
    clob = ClobClient(f"{live.url}/v1/clob/{live.key}/at/{at}")

    book = clob.get_order_book(asset)
    assert (book.asset_id, book.market) == (asset, expected["market"])
    # Polymarket's wire order: bids ascending and asks descending, best last.
    assert [(float(l.price), float(l.size)) for l in reversed(book.bids)][:100] == [(l["price"], l["size"]) for l in expected["bids"]]
    assert [(float(l.price), float(l.size)) for l in reversed(book.asks)][:100] == [(l["price"], l["size"]) for l in expected["asks"]]

    assert float(clob.get_price(asset, "BUY")["price"]) == expected["best_bid"]
    assert float(clob.get_price(asset, "SELL")["price"]) == expected["best_ask"]
    price = raw.get("/v1/price", params={"asset_id": asset, "timestamp": at}).json()["data"]
    assert float(clob.get_midpoint(asset)["mid"]) == pytest.approx(price["midpoint"], abs=1e-9)
    assert float(clob.get_spread(asset)["spread"]) == pytest.approx(price["spread"], abs=1e-9)
