"""hftbacktest data from tickhouse: one token's market channel as hftbacktest's event array, saved as
``.npz`` (key ``data``) for ``BacktestAsset().data([path])``. Writing needs numpy only; reading it back
needs ``pip install 'tickhouse[hftbacktest]'``.

Rows (hftbacktest's ``event_dtype``, every one flagged ``EXCH_EVENT | LOCAL_EVENT``):

- the book just before ``start``, then each exchange ``book``: ``DEPTH_CLEAR_EVENT`` per side with
  ``px`` NaN (the whole side), then ``DEPTH_SNAPSHOT_EVENT`` per level;
- each ``price_change`` item: ``DEPTH_EVENT`` with ``qty`` = the level's new size (0 removes it);
- each trade: ``TRADE_EVENT`` with ``BUY_EVENT`` / ``SELL_EVENT`` from the taker side (neither where no
  taker side was stored).

``exch_ts`` = exchange time, ``local_ts`` = receive time held non-decreasing as ``ts_init`` is in
``tickhouse.nautilus`` (hftbacktest requires both columns in order), or the exchange time with
``local="exchange"``. Messages as ``tickhouse.market_channel`` says (``MarketChannel.to_hftbacktest``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import market_channel as mm

if TYPE_CHECKING:
    from .market_channel import MarketChannel

# hftbacktest's constants (hftbacktest/types.py, 2.4): event kinds are values, the rest bits.
DEPTH_EVENT, TRADE_EVENT, DEPTH_CLEAR_EVENT, DEPTH_SNAPSHOT_EVENT = 1, 2, 3, 4
EXCH_EVENT, LOCAL_EVENT, BUY_EVENT, SELL_EVENT = 1 << 31, 1 << 30, 1 << 29, 1 << 28
EVENT_DTYPE = np.dtype(
    [("ev", "u8"), ("exch_ts", "i8"), ("local_ts", "i8"), ("px", "f8"), ("qty", "f8"), ("order_id", "u8"), ("ival", "i8"), ("fval", "f8")], align=True
)
LocalTime = Literal["receive", "exchange"]
_BOTH = EXCH_EVENT | LOCAL_EVENT
_SIDE = {"bid": BUY_EVENT, "ask": SELL_EVENT, "buy": BUY_EVENT, "sell": SELL_EVENT, "": 0}


@dataclass(frozen=True)
class HftResult:
    path: Path
    rows: int
    tick_size: float  # for BacktestAsset.tick_size: the finest price step of the range
    lot_size: float  # for BacktestAsset.lot_size: sizes have 6 decimals (a coarser lot drops small levels)


def to_hftbacktest(channel: MarketChannel, path: str | Path, *, local: LocalTime = "receive") -> HftResult:
    """Write the channel to ``path`` (``.npz``, key ``data``); ``local="exchange"`` sets ``local_ts = exch_ts``
    (the strategy sees each event at its exchange time, no feed latency)."""
    rows: list[tuple[int, int, int, float, float]] = []
    local_ts = channel.start_ms * 1_000_000 - 1

    def add(ev: int, exch: int, px: float, qty: float) -> None:
        rows.append((ev | _BOTH, exch, local_ts, px, qty))

    def book(b: mm.Book, exch: int) -> None:
        add(DEPTH_CLEAR_EVENT | BUY_EVENT, exch, math.nan, 0.0)
        add(DEPTH_CLEAR_EVENT | SELL_EVENT, exch, math.nan, 0.0)
        for side, levels in ((BUY_EVENT, b.bids), (SELL_EVENT, b.asks)):
            for px, qty in levels:
                add(DEPTH_SNAPSHOT_EVENT | side, exch, px, qty)

    if channel.initial is not None:
        book(channel.initial, local_ts)
    for message in channel.messages():
        local_ts = max(local_ts, round(message.local_t * 1000) * 1000 if local == "receive" else message.t * 1_000_000)
        exch = message.t * 1_000_000
        if isinstance(message, mm.Book):
            book(message, exch)
        elif isinstance(message, mm.Changes):
            for side, px, qty in message.items:
                add(DEPTH_EVENT | _SIDE[side], exch, px, qty)
        else:
            add(TRADE_EVENT | _SIDE[message.taker_side], exch, message.price, message.size)
    decimals = channel.price_decimals
    data = np.zeros(len(rows), EVENT_DTYPE)
    if rows:
        columns: Any = list(zip(*rows, strict=True))
        for name, values in zip(("ev", "exch_ts", "local_ts", "px", "qty"), columns, strict=True):
            data[name] = values
    target = Path(path)
    np.savez_compressed(target, data=data)
    return HftResult(target if target.suffix == ".npz" else target.with_name(target.name + ".npz"), len(rows), 10.0 ** -max(decimals, 2), 1e-6)
