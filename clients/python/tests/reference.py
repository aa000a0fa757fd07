"""The JSON API's own answers, fetched with plain HTTP, and the frames the client must make of them."""

from __future__ import annotations

from typing import Any

import httpx
import pandas as pd


def json_walk(raw: httpx.Client, params: dict[str, Any], page: int) -> list[dict[str, Any]]:
    """Every tick, by following meta.next_cursor with plain HTTP (a page size unlike the client's)."""
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        answer = raw.get("/v1/ticks", params={**params, "limit": page, **({"cursor": cursor} if cursor else {})}).raise_for_status().json()
        rows += answer["data"]
        assert answer["meta"]["count"] == len(answer["data"])
        cursor = answer["meta"]["next_cursor"]
        if cursor is None:
            return rows


def expected_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The frame the client promises, written from the contract: `t` UTC ms timestamps, text as
    pandas' default string dtype, numbers float64, in the API's order."""
    return pd.DataFrame(
        {
            "t": pd.Series(pd.to_datetime([r["t"] for r in rows], unit="ms", utc=True), dtype="datetime64[ms, UTC]"),
            "event": pd.Series([r["event"] for r in rows]),
            "side": pd.Series([r["side"] for r in rows]),
            **{name: pd.Series([r[name] for r in rows], dtype="float64") for name in ("best_bid", "best_ask", "price", "size")},
        }
    )
