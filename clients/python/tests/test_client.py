"""What the client does for a new user beyond the endpoints: the key from the environment, defaults that
match the API's, a clear message for a missing optional dependency, and documented public methods."""

from __future__ import annotations

import inspect
import sys
from typing import Any

import httpx
import pytest
from conftest import Live

import tickhouse


def test_the_key_comes_from_TICKHOUSE_API_KEY_when_none_is_given(live: Live, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TICKHOUSE_API_KEY", live.key)
    with tickhouse.Client(live.url) as c:
        assert c.api_key == live.key and c.me()["plan"] == "unlimited"
    with tickhouse.Client(live.url, live.free_key) as c:  # an explicit key wins
        assert c.me()["plan"] == "free"
    with tickhouse.Client(live.url, api_key="") as c, pytest.raises(tickhouse.InvalidApiKey):  # "" sends none
        c.me()
    monkeypatch.delenv("TICKHOUSE_API_KEY")
    with tickhouse.Client(live.url) as c:
        assert c.api_key is None


def test_execution_price_defaults_to_the_latest_book(client: tickhouse.Client, raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    # As book() and price(): no time means the latest book (the API's own parameter is required).
    latest = raw.get("/v1/execution-price", params={"asset_id": big_asset["asset_id"], "side": "SELL", "amount": 75, "timestamp": 8640000000000000}).json()
    assert client.execution_price(big_asset["asset_id"], "SELL", 75) == latest["data"]
    assert latest["data"]["filled_amount"] > 0


def test_polars_output_without_polars_says_how_to_get_it(client: tickhouse.Client, big_asset: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "polars", None)  # as if the [polars] extra were not installed
    with pytest.raises(ImportError, match=r"pip install 'tickhouse\[polars\]'"):
        client.candles(big_asset["asset_id"], "1h", limit=3, as_="polars")


PUBLIC = [name for name, member in inspect.getmembers(tickhouse.Client) if not name.startswith("_") and callable(member)]


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_method_has_a_numpydoc_docstring(name: str) -> None:
    doc = inspect.getdoc(getattr(tickhouse.Client, name)) or ""
    summary = doc.split("\n", 1)[0]
    assert summary.endswith((".", ":")) and len(summary) > 10, f"{name}: one-line summary first"
    signature = inspect.signature(getattr(tickhouse.Client, name))
    parameters = [p for p in signature.parameters if p != "self"]
    if parameters:
        assert "Parameters\n----------" in doc, name
        for p in parameters:
            assert p in doc, f"{name}: parameter {p} undocumented"
    if name not in ("close",):
        assert "Returns\n-------" in doc or "Yields\n------" in doc, name


def test_the_package_declares_the_repositorys_license() -> None:
    from importlib.metadata import metadata

    assert metadata("tickhouse")["License"] == "Apache-2.0"
