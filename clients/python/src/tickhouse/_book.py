"""``Book``: an L2 order book as ``/v1/orderbook`` returns it, with the levels as DataFrames."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Book:
    """The reconstructed L2 book of one asset at one instant (docs/API.md §4, ``GET /v1/orderbook``).

    Attributes
    ----------
    market : str
        The market's condition id.
    asset_id : str
        The outcome token.
    timestamp : pandas.Timestamp
        Time of the last event applied (UTC).
    best_bid, best_ask : float
        Top of the book; 0 when there are no bids, 1 when there are no asks.
    bids, asks : pandas.DataFrame
        Columns ``price`` and ``size`` (float64); bids best (highest) first, asks best (lowest) first.
    """

    market: str
    asset_id: str
    timestamp: pd.Timestamp
    best_bid: float
    best_ask: float
    bids: pd.DataFrame
    asks: pd.DataFrame

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Book:
        """A book from the ``data`` of a ``/v1/orderbook`` answer (or an element of ``/v1/orderbook/range``'s)."""
        return cls(
            market=data["market"],
            asset_id=data["asset_id"],
            timestamp=pd.Timestamp(data["timestamp"], unit="ms", tz="UTC"),
            best_bid=data["best_bid"],
            best_ask=data["best_ask"],
            bids=_levels(data["bids"]),
            asks=_levels(data["asks"]),
        )


def _levels(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame({"price": pd.Series([r["price"] for r in rows], dtype="float64"), "size": pd.Series([r["size"] for r in rows], dtype="float64")})
